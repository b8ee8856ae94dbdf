//! Work outside a client's command shows where the server shows its own
//! (issue 43): a lease tick and a waiters' pass over
//! `latency-monitor-threshold` are latency events (`dreamtown-lease-tick`,
//! `dreamtown-waiter-pass`) of the same shape as the server's
//! `expire-cycle`, compared in the same run; and a blocked `DREAMS.DRAIN`
//! served later is in `SLOWLOG` as a served `BLMOVE` is, on every server
//! that logs module-blocked clients (all but Redis 7.0, which never logs a
//! client a module unblocked itself: docs/operations.md, "Latency
//! events and SLOWLOG").

use crate::common;

use common::{tenant, wait_until, Server, ServerKind};
use redis::{Connection, Value};

fn call(con: &mut Connection, args: &[&str]) -> Value {
    common::cmd(args).query(con).unwrap_or_else(|error| panic!("{args:?}: {error}"))
}

/// `LATENCY LATEST`'s entry for `event`, if any.
fn latest(con: &mut Connection, event: &str) -> Option<Vec<Value>> {
    let Value::Array(entries) = call(con, &["LATENCY", "LATEST"]) else { return None };
    entries.into_iter().find_map(|entry| match entry {
        Value::Array(fields) if fields.first() == Some(&Value::BulkString(event.as_bytes().to_vec())) => Some(fields),
        _ => None,
    })
}

/// The kinds of the fields of a `LATENCY LATEST` entry.
fn shape(fields: &[Value]) -> Vec<&'static str> {
    fields
        .iter()
        .map(|field| match field {
            Value::BulkString(_) => "bulk",
            Value::Int(_) => "integer",
            _ => "other",
        })
        .collect()
}

#[test]
fn timer_work_over_the_threshold_is_a_latency_event_as_expire_cycle_is() {
    let server = Server::start();
    let mut con = server.connect();
    call(&mut con, &["CONFIG", "SET", "latency-monitor-threshold", "1"]);
    // The server's own: many keys expiring at once, reaped by active expiry.
    call(&mut con, &["EVAL", "for i = 1, 200000 do redis.call('SET', 'exp:' .. i, 'v', 'PX', 1) end", "0"]);
    wait_until("expire-cycle in LATENCY LATEST", || latest(&mut con, "expire-cycle").is_some());
    let native = latest(&mut con, "expire-cycle").expect("expire-cycle");

    // The module's: many leases due at once, expired by the lease timer
    // at most 1,000 and 5 ms per tick.
    let org = tenant("latency");
    let fires = "for i = 1, 20000 do redis.call('DREAMS.FIRE', ARGV[1], 'p' .. i, '1') end \
         for i = 1, 20000 do redis.call('DREAMS.DRAIN', ARGV[1], '0', 'NOQUIET', 'LEASE', '0.001') end";
    call(&mut con, &["EVAL", fires, "0", &org]);
    wait_until("dreamtown-lease-tick in LATENCY LATEST", || latest(&mut con, "dreamtown-lease-tick").is_some());
    let tick = latest(&mut con, "dreamtown-lease-tick").expect("the lease tick");
    assert_eq!(shape(&tick), shape(&native), "{tick:?} against {native:?}");
    let Value::Array(history) = call(&mut con, &["LATENCY", "HISTORY", "dreamtown-lease-tick"]) else { panic!() };
    assert!(!history.is_empty());

    // A waiters' pass: blocked drains of many organisations, each of a
    // big batch, all served in one pass once one script has queued every
    // batch. One drain of 1,000 can take under 1 ms on a fast, idle
    // machine (it did once on Redis 8.2); twenty take twenty times that.
    const DRAINERS: usize = 20;
    let orgs: Vec<String> = (0..DRAINERS).map(|_| tenant("latency-waiter")).collect();
    let blocked: Vec<_> = orgs
        .iter()
        .map(|org| {
            let mut waiter = server.connect();
            let drain = org.clone();
            std::thread::spawn(move || -> Value {
                common::cmd(&["DREAMS.DRAIN", &drain, "0", "NOQUIET", "COUNT", "1000"])
                    .query(&mut waiter)
                    .expect("the blocked drain")
            })
        })
        .collect();
    wait_until("the drains block", || common::blocked_clients(&mut con) == DRAINERS as u64);
    let mut fire = vec![
        "EVAL",
        "for _, org in ipairs(ARGV) do for i = 1, 1000 do redis.call('DREAMS.FIRE', org, 'p' .. i, '1') end end",
        "0",
    ];
    fire.extend(orgs.iter().map(String::as_str));
    call(&mut con, &fire);
    for drain in blocked {
        let Value::Array(served) = drain.join().expect("the drain") else { panic!("a batch") };
        assert_eq!(served.len(), 1000);
    }
    let pass = latest(&mut con, "dreamtown-waiter-pass").expect("the waiters' pass in LATENCY LATEST");
    assert_eq!(shape(&pass), shape(&native), "{pass:?} against {native:?}");
}

/// The commands `SLOWLOG GET` lists, newest first.
fn slowlog_commands(con: &mut Connection) -> Vec<String> {
    let Value::Array(entries) = call(con, &["SLOWLOG", "GET", "100"]) else { return Vec::new() };
    entries
        .iter()
        .filter_map(|entry| match entry {
            Value::Array(fields) => match fields.get(3) {
                Some(Value::Array(argv)) => match argv.first() {
                    Some(Value::BulkString(name)) => Some(String::from_utf8_lossy(name).to_lowercase()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn a_served_blocked_drain_is_in_the_slowlog_as_a_served_blmove_is() {
    let server = Server::start();
    let mut con = server.connect();
    let version = server.version();
    call(&mut con, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    let org = tenant("slowlog");
    let native = format!("native-{org}");
    for (args, push) in [
        (
            vec![
                "BLMOVE".to_owned(),
                native.clone(),
                format!("{native}-dst"),
                "LEFT".into(),
                "RIGHT".into(),
                "0".into(),
            ],
            vec!["RPUSH".to_owned(), native.clone(), "x".into()],
        ),
        (
            vec!["DREAMS.DRAIN".to_owned(), org.clone(), "0".into(), "NOQUIET".into()],
            vec!["DREAMS.FIRE".to_owned(), org.clone(), "p".into(), "1".into()],
        ),
    ] {
        let mut waiter = server.connect();
        let blocked = std::thread::spawn(move || -> Value {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            common::cmd(&args).query(&mut waiter).expect("the blocked call")
        });
        wait_until("the call blocks", || common::blocked_clients(&mut con) == 1);
        call(&mut con, &["SLOWLOG", "RESET"]);
        let push: Vec<&str> = push.iter().map(String::as_str).collect();
        call(&mut con, &push);
        blocked.join().expect("served");
        let logged = slowlog_commands(&mut con);
        let name = push[0].to_lowercase();
        assert!(logged.contains(&name), "{name} in {logged:?}");
        let served = if name == "rpush" { "blmove" } else { "dreams.drain" };
        // Redis 7.0 logs a client a module blocked on keys only when the
        // server itself served it (module.c: `!bc->blocked_on_keys`).
        let expected = !version.is_release(ServerKind::Redis, 7, 0) || served == "blmove";
        assert_eq!(logged.contains(&served.to_owned()), expected, "{served} in {logged:?} on {version:?}");
    }
}
