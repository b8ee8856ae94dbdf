//! The readers the `TOWN.*` containers' subcommands share (`<town>`, an
//! agent or task id), and the two shapes most of them take: the town
//! alone (`TOWN.BACKLOG LEN <town>`) and the town and one id
//! (`TOWN.AGENT GET <town> <agent-id>`), written once as macros.

pub(crate) use super::{id, town};

/// A request of the town alone: `<command words> <town>`.
macro_rules! town_only {
    ($(#[$doc:meta])* $name:ident = [$container:expr, $sub:literal]) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name<'a> {
            /// The town.
            pub town: &'a str,
        }

        impl<'a> $crate::request::Request<'a> for $name<'a> {
            const COMMAND: &'static [&'static str] = &[$container, $sub];

            fn parse(argv: &'a [&'a [u8]]) -> Result<Self, $crate::error::CommandError> {
                let mut args = $crate::args::Args::new(argv);
                let town = $crate::request::town::container_args::town(&mut args)?;
                args.end()?;
                Ok(Self { town })
            }

            fn encode(&self, out: &mut $crate::request::Argv) {
                out.push(self.town);
            }
        }
    };
}
pub(crate) use town_only;

/// A request of the town and one id: `<command words> <town> <id>`, the
/// id in field `$field`, named `$what` in errors.
macro_rules! town_and_id {
    ($(#[$doc:meta])* $name:ident = [$container:expr, $sub:literal], $field:ident: $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name<'a> {
            /// The town.
            pub town: &'a str,
            #[doc = concat!("The ", $what, " (not empty).")]
            pub $field: &'a str,
        }

        impl<'a> $crate::request::Request<'a> for $name<'a> {
            const COMMAND: &'static [&'static str] = &[$container, $sub];

            fn parse(argv: &'a [&'a [u8]]) -> Result<Self, $crate::error::CommandError> {
                let mut args = $crate::args::Args::new(argv);
                let town = $crate::request::town::container_args::town(&mut args)?;
                let $field = $crate::request::town::container_args::id(&mut args, $what)?;
                args.end()?;
                Ok(Self { town, $field })
            }

            fn encode(&self, out: &mut $crate::request::Argv) {
                out.push(self.town).push(self.$field);
            }
        }
    };
}
pub(crate) use town_and_id;
