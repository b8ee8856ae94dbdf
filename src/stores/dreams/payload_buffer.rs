//! The buffer fire payloads are written in (`dreams::message::PayloadBuffer`),
//! kept from one command to the next: every FIRE, and every RECORD or ACK
//! that fires, writes one payload only to copy it into a Redis string, so
//! keeping the buffer saves an allocation per fire and, for consecutive
//! fires of one organization, the escape scan of its name. A part of the
//! module state (freed with it at unload).

use std::cell::Cell;

use crate::dreams::message::PayloadBuffer;
use crate::glue::module_state::PerLoad;

static KEPT: PerLoad<Cell<PayloadBuffer>> = PerLoad::new();

/// The kept buffer (an empty one the first time, or while it is lent).
pub(super) fn take() -> PayloadBuffer {
    KEPT.with(Cell::take)
}

/// Keep `buffer` for the next payload.
pub(super) fn keep(buffer: PayloadBuffer) {
    KEPT.with(|kept| kept.set(buffer));
}
