//! `dreamtown-migrate` on real servers: seed data written the way the seeds
//! write it (exocortex-dreams 0.4.0's own Lua scripts and key names,
//! tinytown 0.10's layout and record fields), moved onto dreamtown and
//! used there with the module's commands; a writer running the seed's
//! scripts during migration passes; the tool killed after every step and
//! re-run; across servers, into a cluster, and back.

mod common;

use std::collections::BTreeMap;

use common::{Server, cmd};
use dreamtown::dreams::message::{FireMessage, RegionWriteCounters};
use dreamtown::dreams::region::RegionKey;
use dreamtown_migrate::conn::Endpoint;
use dreamtown_migrate::dreams::{seed_counters, seed_events, seed_queue};
use dreamtown_migrate::report::TenantReport;
use dreamtown_migrate::{self as migrate, Direction, Family, Options};

const RECORD_WRITE: &str = include_str!("../../tests/fixtures/seed-lua/record_write.lua");
const ENQUEUE_BOUNDED: &str = include_str!("../../tests/fixtures/seed-lua/enqueue_bounded.lua");
const DEFER: &str = include_str!("../../tests/fixtures/seed-lua/defer.lua");
const ACKNOWLEDGE: &str = include_str!("../../tests/fixtures/seed-lua/acknowledge.lua");
const SETTLE_WRITE: &str = include_str!("../../tests/fixtures/seed-lua/settle_write.lua");

/// The seed's keys of an organization's queue.
struct SeedQueue {
    ready: String,
    deferred: String,
    processing: String,
}

impl SeedQueue {
    fn new(org: &str) -> Self {
        let ready = seed_queue(org);
        Self { deferred: format!("{ready}:deferred"), processing: format!("{ready}:processing"), ready }
    }
}

/// The seed's `record_write_once` (RECORD_WRITE_LUA): returns (outcome, fire id).
fn seed_record(
    con: &mut redis::Connection,
    region: &RegionKey,
    memories: u32,
    event: Option<(&str, u64)>,
) -> (i64, String) {
    let queue = SeedQueue::new(&region.org);
    let fire_id = uuid::Uuid::new_v4().to_string();
    let (event_id, generation) = event.unwrap_or(("", 0));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let reply: Vec<i64> = redis::cmd("EVAL")
        .arg(RECORD_WRITE)
        .arg(5)
        .arg(&queue.ready)
        .arg(seed_counters(region))
        .arg(&queue.deferred)
        .arg(&queue.processing)
        .arg(seed_events(region))
        .arg(100_000) // max
        .arg(memories)
        .arg(0) // edges
        .arg(10) // memory threshold
        .arg(1_000_000) // edge threshold
        .arg(now)
        .arg(0) // min interval
        .arg(1_000_000_000) // age floor
        .arg(&region.org)
        .arg(&region.project)
        .arg(region.memory_type)
        .arg("seed-node")
        .arg(&fire_id)
        .arg(event_id)
        .arg(generation)
        .query(con)
        .expect("RECORD_WRITE_LUA");
    (reply[2], fire_id)
}

/// The seed's `fire` (ENQUEUE_BOUNDED_LUA): returns the payload.
fn seed_fire(con: &mut redis::Connection, region: &RegionKey) -> String {
    let queue = SeedQueue::new(&region.org);
    let payload = FireMessage {
        region: region.clone(),
        fired_by: "seed-node".into(),
        fired_at: None,
        fire_id: Some(uuid::Uuid::new_v4().to_string()),
        queued_payload: None,
        quiet_deferred: false,
    }
    .to_payload();
    let queued: i64 = redis::cmd("EVAL")
        .arg(ENQUEUE_BOUNDED)
        .arg(3)
        .arg(&queue.ready)
        .arg(&queue.deferred)
        .arg(&queue.processing)
        .arg(100_000)
        .arg(&payload)
        .query(con)
        .expect("ENQUEUE_BOUNDED_LUA");
    assert_eq!(queued, 1);
    payload
}

/// The seed's drain step: BLMOVE of the head of ready to processing.
fn seed_take(con: &mut redis::Connection, org: &str) -> String {
    let queue = SeedQueue::new(org);
    cmd(&["LMOVE", &queue.ready, &queue.processing, "LEFT", "RIGHT"]).query(con).expect("LMOVE")
}

/// The seed's DEFER_LUA for an item in processing.
fn seed_defer(con: &mut redis::Connection, org: &str, payload: &str) -> String {
    let queue = SeedQueue::new(org);
    let mut message = FireMessage::parse(payload.as_bytes()).expect("a fire");
    message.quiet_deferred = true;
    let deferred = message.to_payload();
    let _: i64 = redis::cmd("EVAL")
        .arg(DEFER)
        .arg(2)
        .arg(&queue.deferred)
        .arg(&queue.processing)
        .arg(1_700_000_000)
        .arg(payload)
        .arg(&deferred)
        .query(con)
        .expect("DEFER_LUA");
    deferred
}

async fn run(
    from: &str,
    to: &str,
    family: Family,
    direction: Direction,
    dry_run: bool,
    tenants: &[&str],
) -> Vec<TenantReport> {
    let mut source = Endpoint::connect(from).await.expect("source");
    let mut target = Endpoint::connect(to).await.expect("target");
    let options = Options {
        family,
        direction,
        dry_run,
        tenants: tenants.iter().map(|t| t.to_string()).collect(),
        stop_after: None,
    };
    let reports = migrate::run(&mut source, &mut target, &options).await.expect("run");
    for report in &reports {
        print!("{report}");
    }
    reports
}

/// Run the binary; its exit code.
fn run_binary(args: &[&str], stop_after: Option<u32>) -> i32 {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_dreamtown-migrate"));
    command.args(args);
    if let Some(step) = stop_after {
        command.env("DREAMTOWN_MIGRATE_STOP_AFTER", step.to_string());
    }
    let output = command.output().expect("run dreamtown-migrate");
    print!("{}", String::from_utf8_lossy(&output.stdout));
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    output.status.code().unwrap_or(-1)
}

fn keys(con: &mut redis::Connection, pattern: &str) -> Vec<String> {
    let mut keys: Vec<String> = cmd(&["KEYS", pattern]).query(con).unwrap();
    keys.sort();
    keys
}

fn hash<C: redis::ConnectionLike>(con: &mut C, key: &str) -> BTreeMap<String, String> {
    cmd(&["HGETALL", key]).query(con).unwrap()
}

fn list<C: redis::ConnectionLike>(con: &mut C, key: &str) -> Vec<String> {
    cmd(&["LRANGE", key, "0", "-1"]).query(con).unwrap()
}

/// A seed organization: two regions, a pending fire in flight, explicit
/// fires ready, one deferred, counted events, and two items that are not
/// fire messages of the organization. Returns (in-flight payload, the
/// payloads ready or deferred).
fn seed_dreams_org(con: &mut redis::Connection, org: &str) -> (String, Vec<String>) {
    let web = RegionKey::new(org, "web", 3);
    let api = RegionKey::new(org, "api", 1);
    let (outcome, _) = seed_record(con, &web, 30, Some(("outbox-1", 1)));
    assert_eq!(outcome, 1, "the region fires");
    let (outcome, _) = seed_record(con, &api, 5, Some(("outbox-2", 2)));
    assert_eq!(outcome, 0);
    let in_flight = seed_take(con, org);
    let ready: Vec<String> = (0..3).map(|_| seed_fire(con, &web)).collect();
    let to_defer = seed_fire(con, &api);
    let taken = seed_take(con, org);
    assert_eq!(taken, ready[0]);
    let deferred = seed_defer(con, org, &taken);
    let queued = vec![ready[1].clone(), ready[2].clone(), to_defer, deferred];
    let queue = SeedQueue::new(org);
    let _: i64 = cmd(&["RPUSH", &queue.ready, "not a fire"]).query(con).unwrap();
    let foreign = seed_fire_payload(&RegionKey::new("someone-else", "web", 3));
    let _: i64 = cmd(&["RPUSH", &queue.ready, &foreign]).query(con).unwrap();
    (in_flight, queued)
}

fn seed_fire_payload(region: &RegionKey) -> String {
    FireMessage {
        region: region.clone(),
        fired_by: "x".into(),
        fired_at: Some(RegionWriteCounters::default()),
        fire_id: Some("f".into()),
        queued_payload: None,
        quiet_deferred: false,
    }
    .to_payload()
}

/// What dreamtown holds for a migrated `seed_dreams_org`, checked through the module.
fn check_dreams_org<C: redis::ConnectionLike>(con: &mut C, org: &str, in_flight: &str) {
    let lengths: Vec<i64> = cmd(&["DREAMS.LEN", org]).query(con).unwrap();
    assert_eq!(lengths, vec![3, 1, 1], "ready, deferred, in flight");
    let dead = list(con, &format!("exocortex:dreams:{{{org}}}:dead"));
    assert_eq!(dead.len(), 2, "the two items that are not fires of {org} are dead letters");
    let counters: BTreeMap<String, String> = cmd(&["DREAMS.COUNTERS", org, "web", "3"]).query(con).unwrap();
    assert_eq!(counters.get("memories").map(String::as_str), Some("30"));
    let api: BTreeMap<String, String> = cmd(&["DREAMS.COUNTERS", org, "api", "1"]).query(con).unwrap();
    assert_eq!(api.get("memories").map(String::as_str), Some("5"));
    assert_eq!(api.get("settled_generation"), None);
    // A replayed event is still deduplicated.
    let replay: (String, i64, i64) =
        cmd(&["DREAMS.RECORD", org, "api", "1", "5", "0", "EVENT", "outbox-2", "GENERATION", "2"]).query(con).unwrap();
    assert_eq!(replay, ("accumulated".into(), 5, 0));
    // The in-flight fire is acknowledged by its payload, as the seed's worker holds it.
    let ack: (String, i64, i64) = cmd(&["DREAMS.ACK", org, in_flight, "SUCCESS"]).query(con).unwrap();
    assert_eq!(ack.0, "acknowledged");
    assert_eq!(ack.1, 0, "the fire's snapshot (30) is subtracted");
}

#[tokio::test]
async fn dreams_forward_on_one_server() {
    let server = Server::start();
    let mut con = server.connect();
    let (in_flight, _) = seed_dreams_org(&mut con, "acme");
    seed_dreams_org(&mut con, "bystander");
    let before = server.digest();

    let reports = run(&server.url(), &server.url(), Family::Dreams, Direction::Forward, true, &["acme"]).await;
    assert!(reports[0].ok());
    assert_eq!(server.digest(), before, "a dry run changes nothing");
    assert_eq!(reports[0].moved.get("ready"), Some(&3));
    assert_eq!(reports[0].dead_lettered, 2);

    let reports = run(&server.url(), &server.url(), Family::Dreams, Direction::Forward, false, &["acme"]).await;
    let report = &reports[0];
    assert!(report.ok(), "{report}");
    assert_eq!(report.keys_found, 7, "ready, deferred, processing, 2 counters, 2 event sets");
    assert_eq!(report.moved.get("ready"), Some(&3));
    assert_eq!(report.moved.get("deferred"), Some(&1));
    assert_eq!(report.moved.get("in flight"), Some(&1));
    assert_eq!(report.moved.get("counter regions"), Some(&2));
    assert_eq!(report.dead_lettered, 2);
    assert!(
        keys(&mut con, "exocortex:dreams:*acme*").iter().all(|k| k.contains("{acme}")),
        "no seed key of acme is left"
    );
    assert!(keys(&mut con, "dreamtown-migrate:*").iter().all(|k| k.ends_with(":applied")), "nothing staged is left");
    assert_eq!(keys(&mut con, "exocortex:dreams:*bystander*").len(), 7, "another organization is untouched");
    check_dreams_org(&mut con, "acme", &in_flight);

    let digest = server.digest();
    let reports = run(&server.url(), &server.url(), Family::Dreams, Direction::Forward, false, &["acme"]).await;
    assert!(reports[0].ok() && reports[0].is_noop(), "{}", reports[0]);
    assert_eq!(server.digest(), digest, "a run with nothing new is a no-op");
}

/// A tinytown message as its serde writes it.
fn town_message(to: &str, priority: &str, text: &str) -> String {
    serde_json::json!({
        "id": uuid::Uuid::new_v4().to_string(),
        "from": "00000000-0000-0000-0000-000000000001",
        "to": to,
        "type": "task",
        "description": text,
        "priority": priority,
        "created_at": "2025-01-01T09:00:00Z",
        "correlation_id": null,
    })
    .to_string()
}

/// tinytown's `set_agent_state`: HDEL of the absent optional fields and HSET, in one pipeline.
fn tinytown_set_agent(con: &mut redis::Connection, town: &str, id: &str, name: &str, nickname: Option<&str>) {
    let key = format!("tt:{town}:agent:{id}");
    let mut fields = vec![
        ("id", id.to_owned()),
        ("name", name.to_owned()),
        ("agent_type", "worker".to_owned()),
        ("state", "idle".to_owned()),
        ("cli", "claude".to_owned()),
        ("created_at", "2025-01-01T09:00:00+00:00".to_owned()),
        ("last_heartbeat", "2025-01-01T09:00:00+00:00".to_owned()),
        ("tasks_completed", "0".to_owned()),
        ("rounds_completed", "0".to_owned()),
        ("last_active_at", "2025-01-01T09:00:00+00:00".to_owned()),
        ("spawn_mode", "fresh".to_owned()),
    ];
    let mut absent = vec!["current_task", "role_id", "parent_agent_id"];
    match nickname {
        Some(nickname) => fields.push(("nickname", nickname.to_owned())),
        None => absent.push("nickname"),
    }
    let mut pipe = redis::pipe();
    pipe.atomic().hdel(&key, &absent).hset_multiple(&key, &fields);
    let _: () = pipe.query(con).expect("set_agent_state");
}

/// A tinytown town: two agents, an inbox with a high-priority message at
/// its head, an urgent message, an activity log and a stop flag with their
/// TTLs, a task and the backlog, the docket stream with its group and one
/// delivered entry, the event streams, and a mission key (not dreamtown's).
fn seed_town(con: &mut redis::Connection, town: &str) -> (String, Vec<String>) {
    let a = uuid::Uuid::new_v4().to_string();
    let b = uuid::Uuid::new_v4().to_string();
    tinytown_set_agent(con, town, &a, "backend", None);
    tinytown_set_agent(con, town, &b, "frontend", Some("bee"));
    let inbox = format!("tt:{town}:inbox:{a}");
    let m1 = town_message(&a, "normal", "one");
    let m2 = town_message(&a, "low", "two");
    let h1 = town_message(&a, "high", "first");
    let u1 = town_message(&a, "urgent", "now");
    let _: i64 = cmd(&["RPUSH", &inbox, &m1]).query(con).unwrap();
    let _: i64 = cmd(&["RPUSH", &inbox, &m2]).query(con).unwrap();
    let _: i64 = cmd(&["LPUSH", &inbox, &h1]).query(con).unwrap();
    let _: i64 = cmd(&["LPUSH", &format!("tt:{town}:urgent:{a}"), &u1]).query(con).unwrap();
    let activity = format!("tt:{town}:activity:{a}");
    let _: i64 = cmd(&["LPUSH", &activity, "wrote the parser"]).query(con).unwrap();
    let _: () = cmd(&["LTRIM", &activity, "0", "9"]).query(con).unwrap();
    let _: i64 = cmd(&["EXPIRE", &activity, "3600"]).query(con).unwrap();
    let _: () = cmd(&["SET", &format!("tt:{town}:stop:{b}"), "1", "EX", "3600"]).query(con).unwrap();
    let task = uuid::Uuid::new_v4().to_string();
    let mut pipe = redis::pipe();
    pipe.atomic()
        .hdel(format!("tt:{town}:task:{task}"), &["assigned_to", "started_at", "completed_at", "result", "parent_id"])
        .hset_multiple(
            format!("tt:{town}:task:{task}"),
            &[
                ("id", task.as_str()),
                ("description", "write the parser"),
                ("state", "pending"),
                ("created_at", "2025-01-01T09:00:00+00:00"),
                ("updated_at", "2025-01-01T09:00:00+00:00"),
                ("tags", "[\"parser\"]"),
            ],
        );
    let _: () = pipe.query(con).unwrap();
    let _: i64 = cmd(&["RPUSH", &format!("tt:{town}:backlog"), &task]).query(con).unwrap();
    let docket = format!("tt:{town}:docket:tasks");
    let _: () = cmd(&["XGROUP", "CREATE", &docket, "workers", "$", "MKSTREAM"]).query(con).unwrap();
    let _: String = cmd(&["XADD", &docket, "*", "task", &task]).query(con).unwrap();
    let _: String = cmd(&["XADD", &docket, "*", "task", "t-2"]).query(con).unwrap();
    let _: redis::Value =
        cmd(&["XREADGROUP", "GROUP", "workers", "w1", "COUNT", "1", "STREAMS", &docket, ">"]).query(con).unwrap();
    let _: String = cmd(&["XADD", &format!("tt:{town}:events"), "*", "event", "agent_spawned"]).query(con).unwrap();
    let _: String = cmd(&["XADD", &format!("tt:{town}:events:agent:{a}"), "*", "event", "started"]).query(con).unwrap();
    let _: () = cmd(&["SET", &format!("tt:{town}:mission:r1"), "{}"]).query(con).unwrap();
    (a, vec![u1, h1, m1, m2])
}

/// What dreamtown holds for a migrated `seed_town`, checked through the module.
fn check_town<C: redis::ConnectionLike>(con: &mut C, town: &str, agent: &str, messages: &[String]) {
    let agents: Vec<BTreeMap<String, String>> = cmd(&["TOWN.AGENT", "LIST", town]).query(con).unwrap();
    assert_eq!(agents.len(), 2, "TOWN.AGENT LIST finds both agents");
    let backend: BTreeMap<String, String> = cmd(&["TOWN.AGENT", "BYNAME", town, "backend"]).query(con).unwrap();
    assert_eq!(backend.get("id").map(String::as_str), Some(agent));
    assert_eq!(backend.get("spawn_mode").map(String::as_str), Some("fresh"));
    let tasks: Vec<BTreeMap<String, String>> = cmd(&["TOWN.TASK", "LIST", town]).query(con).unwrap();
    assert_eq!(tasks.len(), 1, "TOWN.TASK LIST finds the task");
    assert_eq!(tasks[0].get("tags").map(String::as_str), Some("[\"parser\"]"));
    let received: Vec<String> = cmd(&["TOWN.RECV", town, agent, "COUNT", "10"]).query(con).unwrap();
    assert_eq!(received, messages, "urgent first, then the inbox in its order");
    let ttl: i64 = cmd(&["PTTL", &format!("tt:{{{town}}}:activity:{agent}")]).query(con).unwrap();
    assert!(ttl > 3_000_000 && ttl <= 3_600_000, "the activity log keeps its TTL ({ttl})");
    let backlog: Vec<String> = cmd(&["TOWN.BACKLOG", "LIST", town]).query(con).unwrap();
    assert_eq!(backlog.len(), 1);
    let docket = format!("tt:{{{town}}}:docket:tasks");
    let pending: (i64, Option<String>, Option<String>, redis::Value) =
        cmd(&["XPENDING", &docket, "workers"]).query(con).unwrap();
    assert_eq!(pending.0, 1, "the delivered, unacknowledged docket entry is still pending for its consumer");
    assert_eq!(cmd(&["XLEN", &docket]).query::<i64>(con).unwrap(), 2);
    assert_eq!(cmd(&["XLEN", &format!("tt:{{{town}}}:events:agent:{agent}")]).query::<i64>(con).unwrap(), 1);
}

#[tokio::test]
async fn town_forward_on_one_server() {
    let server = Server::start();
    let mut con = server.connect();
    let (agent, messages) = seed_town(&mut con, "acme");
    let stop_ttl: i64 = cmd(&["PTTL", "tt:acme:stop:x"]).query(&mut con).unwrap();
    assert_eq!(stop_ttl, -2);
    let docket_ids: Vec<(String, BTreeMap<String, String>)> =
        cmd(&["XRANGE", "tt:acme:docket:tasks", "-", "+"]).query(&mut con).unwrap();
    let before = server.digest();
    let reports = run(&server.url(), &server.url(), Family::Town, Direction::Forward, true, &["acme"]).await;
    assert!(reports[0].ok() && reports[0].moved.get("inbox messages") == Some(&3), "{}", reports[0]);
    assert_eq!(server.digest(), before, "a dry run changes nothing");

    let reports = run(&server.url(), &server.url(), Family::Town, Direction::Forward, false, &["acme"]).await;
    let report = &reports[0];
    assert!(report.ok(), "{report}");
    assert_eq!(report.moved.get("agent records"), Some(&2));
    assert_eq!(report.moved.get("inbox messages"), Some(&3));
    assert_eq!(report.left, vec![("tt:acme:mission:r1".to_string(), "not a key dreamtown's Town owns".to_string())]);
    assert_eq!(keys(&mut con, "tt:acme:*"), vec!["tt:acme:mission:r1".to_string()], "only the mission key is left");
    let moved_ids: Vec<(String, BTreeMap<String, String>)> =
        cmd(&["XRANGE", "tt:{acme}:docket:tasks", "-", "+"]).query(&mut con).unwrap();
    assert_eq!(moved_ids, docket_ids, "stream entries keep their ids");
    let stops = keys(&mut con, "tt:{acme}:stop:*");
    assert_eq!(stops.len(), 1);
    let ttl: i64 = cmd(&["PTTL", &stops[0]]).query(&mut con).unwrap();
    assert!(ttl > 3_000_000 && ttl <= 3_600_000, "the stop flag keeps its TTL ({ttl})");
    check_town(&mut con, "acme", &agent, &messages);

    let digest = server.digest();
    let reports = run(&server.url(), &server.url(), Family::Town, Direction::Forward, false, &["acme"]).await;
    assert!(reports[0].ok() && reports[0].keys_found == 0, "{}", reports[0]);
    assert_eq!(server.digest(), digest, "a run with nothing new is a no-op");
    // tinytown keeps writing the docket: a stream made afresh on the old side
    // merges into the moved one (ids above its last kept, an older id
    // renumbered, delivery state reported as not carried).
    let _: () = cmd(&["XGROUP", "CREATE", "tt:acme:docket:tasks", "workers", "$", "MKSTREAM"]).query(&mut con).unwrap();
    let newer: String = cmd(&["XADD", "tt:acme:docket:tasks", "*", "task", "t-3"]).query(&mut con).unwrap();
    let _: redis::Value =
        cmd(&["XREADGROUP", "GROUP", "workers", "w2", "STREAMS", "tt:acme:docket:tasks", ">"]).query(&mut con).unwrap();
    let _: String = cmd(&["XADD", "tt:acme:events", "1-1", "event", "old"]).query(&mut con).unwrap();
    let reports = run(&server.url(), &server.url(), Family::Town, Direction::Forward, false, &["acme"]).await;
    assert!(reports[0].ok(), "{}", reports[0]);
    assert_eq!((reports[0].new_stream_ids, reports[0].pending_not_carried), (1, 1));
    let ids: Vec<(String, BTreeMap<String, String>)> =
        cmd(&["XRANGE", "tt:{acme}:docket:tasks", "-", "+"]).query(&mut con).unwrap();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[2].0, newer, "a newer entry keeps its id");
    assert_eq!(
        cmd(&["XLEN", "tt:{acme}:events"]).query::<i64>(&mut con).unwrap(),
        2,
        "the older one is appended, renumbered"
    );
}

/// Where each of `payloads` is, among list and sorted-set members: (in
/// live keys, seed's or dreamtown's, of `org`; in staged keys).
fn whereabouts(con: &mut redis::Connection, org: &str, payloads: &[String]) -> Vec<(usize, usize)> {
    let mut live = Vec::new();
    let mut staged = Vec::new();
    let org_keys = keys(con, &format!("exocortex:dreams:*{org}*"));
    let stage_keys = keys(con, &format!("dreamtown-migrate:{{{org}}}:dreams:stage:*"));
    for (names, into) in [(org_keys, &mut live), (stage_keys, &mut staged)] {
        for key in names {
            let kind: String = cmd(&["TYPE", &key]).query(con).unwrap();
            match kind.as_str() {
                "list" => into.extend(list(con, &key)),
                "zset" => into.extend(cmd(&["ZRANGE", &key, "0", "-1"]).query::<Vec<String>>(con).unwrap()),
                _ => {}
            }
        }
    }
    payloads
        .iter()
        .map(|p| (live.iter().filter(|x| *x == p).count(), staged.iter().filter(|x| *x == p).count()))
        .collect()
}

/// Kill the tool after step k (stage = 1, apply = 2, delete the staged
/// copy = 3; a re-run counts from 1 again), for every sequence of kills
/// below, then run it to the end: between kills nothing is lost or visible
/// twice, and the end state is the same as without kills.
#[test]
fn killed_at_every_step_a_rerun_converges() {
    let server = Server::start();
    let mut con = server.connect();
    let url = server.url();
    let patterns: [&[u32]; 7] = [&[1], &[2], &[3], &[1, 1], &[1, 2], &[2, 1], &[1, 1, 1]];
    for (n, kills) in patterns.iter().enumerate() {
        let org = format!("org-{n}");
        let (in_flight, ready) = seed_dreams_org(&mut con, &org);
        let mut payloads = ready.clone();
        payloads.push(in_flight.clone());
        let town = format!("town-{n}");
        let (agent, messages) = seed_town(&mut con, &town);
        for &step in kills.iter() {
            assert_eq!(run_binary(&["--from", &url, "dreams", &org], Some(step)), 75, "stopped after step {step}");
            for (p, (live, staged)) in payloads.iter().zip(whereabouts(&mut con, &org, &payloads)) {
                assert!(live <= 1, "{p} is visible {live} times after a kill at step {step}");
                assert!(live + staged >= 1, "{p} is lost after a kill at step {step}");
            }
            assert_eq!(run_binary(&["--from", &url, "town", &town], Some(step)), 75, "stopped after step {step}");
            let inbox_items: usize = [format!("tt:{town}:inbox:{agent}"), format!("tt:{{{town}}}:inbox:{agent}")]
                .iter()
                .map(|key| list(&mut con, key).len())
                .sum();
            assert!(inbox_items == 0 || inbox_items == 3, "an inbox is never split or doubled ({inbox_items})");
        }
        assert_eq!(run_binary(&["--from", &url, "dreams", &org], None), 0);
        assert_eq!(run_binary(&["--from", &url, "town", &town], None), 0);
        assert!(keys(&mut con, &format!("dreamtown-migrate:{{{org}}}:*")).iter().all(|k| k.ends_with(":applied")));
        assert!(keys(&mut con, &format!("dreamtown-migrate:{{{town}}}:*")).iter().all(|k| k.ends_with(":applied")));
        for (p, (live, staged)) in payloads.iter().zip(whereabouts(&mut con, &org, &payloads)) {
            assert_eq!((live, staged), (1, 0), "{p} lands exactly once");
        }
        check_dreams_org(&mut con, &org, &in_flight);
        check_town(&mut con, &town, &agent, &messages);
    }
}

/// A rolling upgrade across servers: the seed's writers keep running their
/// scripts on the old server (records with event ids, explicit fires,
/// tinytown sends and heartbeats) while migration passes run, some of them
/// killed after a step. Once the writers stop, a last pass moves the rest:
/// every counter increment, event id, fire and message is on the new
/// server exactly once, messages in the order they were sent.
#[test]
fn rolling_upgrade_with_seed_writers_running_lands_everything_once() {
    let seed = Server::start_plain();
    let target = Server::start();
    let (from, to) = (seed.url(), target.url());
    let org = "rolling";
    let town = "rolling";
    let agent = uuid::Uuid::new_v4().to_string();
    // Lockstep, so batch boundaries fall every STRIDE writes, between the
    // writer's whole-record writes (iterations 50 and 80) too: the writer
    // waits for a pass after each STRIDE iterations, a pass waits for them.
    const STRIDE: u64 = 5;
    const ITERATIONS: u64 = 120;
    let written = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let passed = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let mut con = seed.connect();
        let agent = agent.clone();
        let written = written.clone();
        let passed = passed.clone();
        std::thread::spawn(move || {
            let web = RegionKey::new(org, "web", 3);
            let (mut records, mut events, mut fire_ids, mut fires, mut messages) =
                (0u64, Vec::new(), Vec::new(), Vec::new(), Vec::new());
            tinytown_set_agent(&mut con, town, &agent, "backend", None);
            let mut i = 0;
            while i < ITERATIONS {
                let event = format!("ev-{i}");
                let (outcome, fire_id) = seed_record(&mut con, &web, 1, Some((&event, 1)));
                records += 1;
                events.push(event);
                if outcome == 1 {
                    fire_ids.push(fire_id);
                }
                if i % 7 == 0 {
                    fires.push(seed_fire(&mut con, &RegionKey::new(org, "api", 1)));
                }
                let message = town_message(&agent, "normal", &format!("m{i}"));
                let _: i64 = cmd(&["RPUSH", &format!("tt:{town}:inbox:{agent}"), &message]).query(&mut con).unwrap();
                messages.push(message);
                // tinytown's whole-record write (with HDEL of absent fields)
                // twice, its HINCRBY and its one-field heartbeat every time.
                if i == 50 || i == 80 {
                    tinytown_set_agent(&mut con, town, &agent, "backend", (i == 50).then_some("bee"));
                }
                let _: i64 = cmd(&["HINCRBY", &format!("tt:{town}:agent:{agent}"), "rounds_completed", "1"])
                    .query(&mut con)
                    .unwrap();
                let _: i64 =
                    cmd(&["HSET", &format!("tt:{town}:agent:{agent}"), "last_heartbeat", &format!("beat-{i}")])
                        .query(&mut con)
                        .unwrap();
                i += 1;
                written.store(i, std::sync::atomic::Ordering::SeqCst);
                if i % STRIDE == 0 && i < ITERATIONS {
                    common::wait_until("a migration pass", || {
                        passed.load(std::sync::atomic::Ordering::SeqCst) >= i / STRIDE
                    });
                }
            }
            (records, events, fire_ids, fires, messages)
        })
    };
    let stops = [None, Some(1), Some(2), Some(3), None, Some(2)];
    for pass in 1..ITERATIONS / STRIDE {
        common::wait_until("the seed's writer wrote more", || {
            written.load(std::sync::atomic::Ordering::SeqCst) >= pass * STRIDE
        });
        let stop = stops[pass as usize % stops.len()];
        let dreams = run_binary(&["--from", &from, "--to", &to, "dreams", org], stop);
        let town_code = run_binary(&["--from", &from, "--to", &to, "town", town], stop);
        assert!(matches!(dreams, 0 | 75) && matches!(town_code, 0 | 75), "{dreams} {town_code}");
        passed.store(pass, std::sync::atomic::Ordering::SeqCst);
    }
    let (records, events, fire_ids, fires, messages) = writer.join().expect("writer");
    assert_eq!(run_binary(&["--from", &from, "--to", &to, "dreams", org], None), 0);
    assert_eq!(run_binary(&["--from", &from, "--to", &to, "town", town], None), 0);

    let mut source = seed.connect();
    let mut con = target.connect();
    assert!(keys(&mut source, "exocortex:dreams:*").is_empty(), "nothing left on the old server");
    assert!(keys(&mut source, "dreamtown-migrate:*").is_empty(), "nothing staged on the old server");
    assert!(keys(&mut source, "tt:*").is_empty());
    let counters: BTreeMap<String, String> = cmd(&["DREAMS.COUNTERS", org, "web", "3"]).query(&mut con).unwrap();
    assert_eq!(counters.get("memories"), Some(&records.to_string()), "every increment exactly once");
    let mut counted: Vec<String> =
        cmd(&["SMEMBERS", &format!("exocortex:dreams:{{{org}}}:events:3:web")]).query(&mut con).unwrap();
    let mut expected = events.clone();
    counted.sort();
    expected.sort();
    assert_eq!(counted, expected, "the event sets united");
    let ready = list(&mut con, &format!("exocortex:dreams:{{{org}}}:queue"));
    for fire in &fires {
        assert_eq!(ready.iter().filter(|item| *item == fire).count(), 1, "explicit fire {fire} exactly once");
    }
    assert!(fire_ids.len() > 1, "the writer's records fired more than once ({})", fire_ids.len());
    for fire_id in &fire_ids {
        assert_eq!(
            ready.iter().filter(|item| item.contains(fire_id.as_str())).count(),
            1,
            "record fire {fire_id} exactly once"
        );
    }
    assert_eq!(ready.len(), fires.len() + fire_ids.len(), "nothing else in ready");
    let pending = counters.get("pending").expect("a pending fire");
    assert!(fire_ids.contains(pending), "the region's pending fire is one of the seed's");
    let inbox = list(&mut con, &format!("tt:{{{town}}}:inbox:{agent}"));
    assert_eq!(inbox, messages, "every message exactly once, in the order sent");
    let record: BTreeMap<String, String> = cmd(&["TOWN.AGENT", "GET", town, &agent]).query(&mut con).unwrap();
    assert_eq!(
        record.get("last_heartbeat"),
        Some(&format!("beat-{}", messages.len() - 1)),
        "the latest heartbeat wins"
    );
    assert_eq!(record.get("name").map(String::as_str), Some("backend"), "a heartbeat-only batch keeps the record");
    let rounds = messages.len() - 80;
    assert_eq!(
        record.get("rounds_completed"),
        Some(&rounds.to_string()),
        "increments since the last whole write add up"
    );
    assert_eq!(record.get("nickname"), None, "a field the last whole write removed is gone");
}

/// From a seed server without the module into a 3-master cluster (`--all`,
/// tenants routed to their slots), used there through the module; then
/// `--reverse` from the cluster to another plain server, with a leased
/// drain and a reliably received message outstanding: the seed's layout
/// comes back (leases dropped, indexes removed, the unacknowledged message
/// at the head of the inbox) and the seed's own ACKNOWLEDGE_LUA
/// acknowledges the fire that was in flight.
#[test]
fn into_a_cluster_and_back() {
    let seed = Server::start_plain();
    let cluster = common::Cluster::start(3);
    let entry = cluster.nodes[0].url();
    let mut con = seed.connect();
    let orgs = ["acme", "hooli", "umbrella"]; // slots on three different masters
    let seeded: Vec<(String, Vec<String>)> = orgs.iter().map(|org| seed_dreams_org(&mut con, org)).collect();
    let towns: Vec<(String, Vec<String>)> = ["north", "south"].iter().map(|town| seed_town(&mut con, town)).collect();
    let original_agent = hash(&mut con, &format!("tt:south:agent:{}", towns[1].0));

    assert_eq!(run_binary(&["--from", &seed.url(), "--to", &entry, "dreams", "--all"], None), 0);
    assert_eq!(run_binary(&["--from", &seed.url(), "--to", &entry, "town", "--all"], None), 0);
    assert_eq!(keys(&mut con, "*"), vec!["tt:north:mission:r1".to_string(), "tt:south:mission:r1".to_string()]);
    let mut admin = cluster.nodes[0].connect();
    let slots: std::collections::BTreeSet<usize> = orgs
        .iter()
        .map(|org| cluster.owner_of_slot(cmd(&["CLUSTER", "KEYSLOT", org]).query(&mut admin).unwrap()))
        .collect();
    assert_eq!(slots.len(), 3, "the organizations live on three nodes");

    let mut cc = redis::cluster::ClusterClient::new(cluster.urls()).unwrap().get_connection().unwrap();
    check_dreams_org(&mut cc, "hooli", &seeded[1].0);
    check_dreams_org(&mut cc, "umbrella", &seeded[2].0);
    check_town(&mut cc, "north", &towns[0].0, &towns[0].1);

    // Outstanding work on the new side: a leased drain, a leased reliable receive.
    let (acme_in_flight, acme_queued) = &seeded[0];
    let drained: String = cmd(&["DREAMS.DRAIN", "acme", "1", "NOQUIET", "LEASE", "60"]).query(&mut cc).unwrap();
    assert_eq!(&drained, &acme_queued[0]);
    let (south_agent, south_messages) = &towns[1];
    let received: Vec<String> =
        cmd(&["TOWN.RECV", "south", south_agent, "RELIABLE", "LEASE", "60"]).query(&mut cc).unwrap();
    assert_eq!(received, vec![south_messages[0].clone()]);

    let back = Server::start_plain();
    let digests: Vec<String> = cluster.nodes.iter().map(Server::digest).collect();
    assert_eq!(
        run_binary(&["--dry-run", "--reverse", "--from", &entry, "--to", &back.url(), "dreams", "--all"], None),
        0
    );
    assert_eq!(
        run_binary(&["--dry-run", "--reverse", "--from", &entry, "--to", &back.url(), "town", "--all"], None),
        0
    );
    assert_eq!(cluster.nodes.iter().map(Server::digest).collect::<Vec<_>>(), digests, "a dry run changes nothing");
    assert_eq!(back.digest(), "0".repeat(40));
    assert_eq!(run_binary(&["--reverse", "--from", &entry, "--to", &back.url(), "dreams", "acme"], None), 0);
    assert_eq!(run_binary(&["--reverse", "--from", &entry, "--to", &back.url(), "town", "south"], None), 0);
    let mut old = back.connect();
    let queue = SeedQueue::new("acme");
    // DRAIN promoted the due deferral to the tail of ready before taking the head.
    assert_eq!(
        list(&mut old, &queue.ready),
        vec![acme_queued[1].clone(), acme_queued[2].clone(), acme_queued[3].clone()]
    );
    assert_eq!(list(&mut old, &queue.processing), vec![acme_in_flight.clone(), drained.clone()]);
    let web = RegionKey::new("acme", "web", 3);
    let message = FireMessage::parse(acme_in_flight.as_bytes()).unwrap();
    let fire_id = message.fire_id.clone().unwrap();
    assert_eq!(hash(&mut old, &seed_counters(&web)).get("pending"), Some(&fire_id));
    let acked: Vec<i64> = redis::cmd("EVAL")
        .arg(ACKNOWLEDGE)
        .arg(4)
        .arg(&queue.ready)
        .arg(seed_counters(&web))
        .arg(&queue.deferred)
        .arg(&queue.processing)
        .arg(&fire_id)
        .arg(1)
        .arg(30)
        .arg(0)
        .arg(1_800_000_000u64)
        .arg(1000)
        .arg(10)
        .arg(1_000_000)
        .arg(3600)
        .arg(1_000_000_000)
        .arg("acme")
        .arg("web")
        .arg(3)
        .arg("seed-node")
        .arg(uuid::Uuid::new_v4().to_string())
        .arg(acme_in_flight)
        .query(&mut old)
        .unwrap();
    assert_eq!(acked, vec![0, 0, 1], "the seed acknowledges the fire that was in flight");
    assert!(keys(&mut old, "exocortex:dreams:*{acme}*").is_empty());
    assert_eq!(
        list(&mut old, &format!("tt:south:inbox:{south_agent}")),
        south_messages.clone(),
        "the unacknowledged message is back at the head of the inbox"
    );
    assert_eq!(hash(&mut old, &format!("tt:south:agent:{south_agent}")), original_agent);
    let pending: (i64, Option<String>, Option<String>, redis::Value) =
        cmd(&["XPENDING", "tt:south:docket:tasks", "workers"]).query(&mut old).unwrap();
    assert_eq!(pending.0, 1);
    for node in &cluster.nodes {
        let mut node = node.connect();
        let left = keys(&mut node, "*{acme}*");
        assert!(left.iter().all(|k| k.ends_with(":dead") || k.ends_with(":applied")), "{left:?}");
        let left = keys(&mut node, "*{south}*");
        assert!(left.iter().all(|k| k.ends_with(":applied")), "indexes and leases are removed: {left:?}");
    }
}

/// A region first written after the tool listed the keys: its pending fire
/// is in the staged ready list but its counters are not. The batch takes
/// the counters in before it is applied, so the fire arrives with the
/// counters that name it pending and its ACK is not stale (without that,
/// the ACK would remove it as stale and the counters, arriving later,
/// would hold a pending fire that no longer exists: the region would never
/// fire again).
#[tokio::test]
async fn a_fire_never_arrives_without_its_region() {
    let server = Server::start();
    let mut con = server.connect();
    let region = RegionKey::new("late", "web", 3);
    let (outcome, fire_id) = seed_record(&mut con, &region, 30, None);
    assert_eq!(outcome, 1);
    let queue = SeedQueue::new("late");
    // The race, forced: a batch staged from a listing that predates the region.
    let mut source = Endpoint::connect(&server.url()).await.unwrap();
    let mut target = Endpoint::connect(&server.url()).await.unwrap();
    let staged =
        migrate::stage::stage(&mut source, Family::Dreams, "late", &[queue.ready.clone().into_bytes()]).await.unwrap();
    assert_eq!(staged.map(|batch| batch.keys.len()), Some(1));
    let options = Options {
        family: Family::Dreams,
        direction: Direction::Forward,
        dry_run: false,
        tenants: vec!["late".into()],
        stop_after: Some(2),
    };
    // Stopped right after the batch is applied, before anything else moves.
    assert!(matches!(migrate::run(&mut source, &mut target, &options).await, Err(migrate::Error::Stopped(2))));
    let drained: String = cmd(&["DREAMS.DRAIN", "late", "1", "NOQUIET"]).query(&mut con).unwrap();
    assert!(drained.contains(&fire_id));
    let ack: (String, i64, i64) = cmd(&["DREAMS.ACK", "late", &drained, "SUCCESS"]).query(&mut con).unwrap();
    assert_eq!(ack, ("acknowledged".into(), 0, 0));
    let reports = run(&server.url(), &server.url(), Family::Dreams, Direction::Forward, false, &["late"]).await;
    assert!(reports[0].ok());
    let counters: BTreeMap<String, String> = cmd(&["DREAMS.COUNTERS", "late", "web", "3"]).query(&mut con).unwrap();
    assert_eq!(counters.get("pending"), None, "no pending fire is left behind");
}

/// Workers already on dreamtown, blocked on an empty queue and an empty
/// inbox, are woken by the migration's writes and get the first item.
#[test]
fn blocked_workers_on_dreamtown_are_woken_by_a_migration() {
    let server = Server::start();
    let mut con = server.connect();
    let (_, queued) = seed_dreams_org(&mut con, "waiting");
    let (agent, messages) = seed_town(&mut con, "waiting");
    let drainer = {
        let mut con = server.connect();
        std::thread::spawn(move || {
            cmd(&["DREAMS.DRAIN", "waiting", "30", "NOQUIET"]).query::<Option<String>>(&mut con).unwrap()
        })
    };
    let receiver = {
        let mut con = server.connect();
        let agent = agent.clone();
        std::thread::spawn(move || {
            cmd(&["TOWN.RECV", "waiting", &agent, "BLOCK", "30"]).query::<Option<Vec<String>>>(&mut con).unwrap()
        })
    };
    common::wait_until("both workers are blocked", || {
        let info: String = cmd(&["INFO", "clients"]).query(&mut server.connect()).unwrap();
        info.lines().any(|line| line.trim() == "blocked_clients:2")
    });
    assert_eq!(run_binary(&["--from", &server.url(), "dreams", "waiting"], None), 0);
    assert_eq!(run_binary(&["--from", &server.url(), "town", "waiting"], None), 0);
    assert_eq!(drainer.join().unwrap().as_ref(), Some(&queued[0]), "the drainer gets the head of ready");
    assert_eq!(receiver.join().unwrap(), Some(vec![messages[0].clone()]), "the receiver gets the urgent message");
}

/// Counters merge by the rules: memories and edges add (saturating),
/// last_success and settled_generation take the larger, event sets unite,
/// and when both sides hold a pending fire the target's is kept (the
/// report counts it) while the other fire still lands in the queue.
#[tokio::test]
async fn counters_merge_by_the_rules() {
    let server = Server::start();
    let mut con = server.connect();
    let region = RegionKey::new("merge", "web", 3);
    let seed_key = seed_counters(&region);
    let _: () = cmd(&[
        "HSET",
        &seed_key,
        "memories",
        "10",
        "edges",
        "7",
        "last_success",
        "200",
        "settled_generation",
        "3",
        "pending",
        "seed-fire",
    ])
    .query(&mut con)
    .unwrap();
    let _: () = cmd(&["SADD", &seed_events(&region), "a", "b"]).query(&mut con).unwrap();
    let own = seed_fire_payload(&region).replace("\"fire_id\":\"f\"", "\"fire_id\":\"seed-fire\"");
    let _: () = cmd(&["RPUSH", &seed_queue("merge"), &own]).query(&mut con).unwrap();
    let target_key = "exocortex:dreams:{merge}:counters:3:web";
    let _: () = cmd(&[
        "HSET",
        target_key,
        "memories",
        "4294967290",
        "edges",
        "1",
        "last_success",
        "100",
        "settled_generation",
        "5",
        "pending",
        "new-fire",
    ])
    .query(&mut con)
    .unwrap();
    let _: () = cmd(&["SADD", "exocortex:dreams:{merge}:events:3:web", "b", "c"]).query(&mut con).unwrap();
    let reports = run(&server.url(), &server.url(), Family::Dreams, Direction::Forward, false, &["merge"]).await;
    assert!(reports[0].ok());
    assert_eq!(reports[0].pending_conflicts, 1);
    let merged = hash(&mut con, target_key);
    let expected: BTreeMap<String, String> = [
        ("memories", "4294967295"),
        ("edges", "8"),
        ("last_success", "200"),
        ("settled_generation", "5"),
        ("pending", "new-fire"),
    ]
    .into_iter()
    .map(|(f, v)| (f.to_string(), v.to_string()))
    .collect();
    assert_eq!(merged, expected);
    let mut events: Vec<String> = cmd(&["SMEMBERS", "exocortex:dreams:{merge}:events:3:web"]).query(&mut con).unwrap();
    events.sort();
    assert_eq!(events, vec!["a", "b", "c"]);
    let drained: String = cmd(&["DREAMS.DRAIN", "merge", "1", "NOQUIET"]).query(&mut con).unwrap();
    assert_eq!(drained, own, "the seed's pending fire still runs");
    let ack: (String, i64, i64) = cmd(&["DREAMS.ACK", "merge", &drained, "SUCCESS"]).query(&mut con).unwrap();
    assert_eq!(ack.0, "stale", "and acknowledges as stale: the target's pending fire owns the counters");
}

/// The seed's counters move as dreamtown reads them: a settled generation
/// of 10^17 or more, which the seed's own SETTLE_WRITE_LUA stores as Redis
/// prints a Lua number (`1.2345678901234568e+17`), moves as the integer it
/// stands for and still fences older deliveries on dreamtown (the apply
/// script used to refuse the batch); a `last_success` dreamtown cannot hold
/// (above i64) fails its organization, whose keys stay with the seed (it
/// used to move, and dreamtown refused every later RECORD of the region).
#[tokio::test]
async fn seed_counters_move_as_dreamtown_reads_them() {
    let server = Server::start();
    let mut con = server.connect();
    let big = RegionKey::new("big", "web", 3);
    let _: i64 = redis::cmd("EVAL")
        .arg(SETTLE_WRITE)
        .arg(2)
        .arg(seed_counters(&big))
        .arg(seed_events(&big))
        .arg("ev-1")
        .arg(123_456_789_012_345_678u64)
        .arg(1)
        .query(&mut con)
        .expect("SETTLE_WRITE_LUA");
    // The seed's own spelling depends on the server's Lua: Redis 7.0 prints
    // the exponent form, Redis 8 and Valkey the integer.
    let spelled = hash(&mut con, &seed_counters(&big))["settled_generation"].clone();
    assert!(
        ["1.2345678901234568e+17", "123456789012345680"].contains(&spelled.as_str()),
        "the seed's own spelling: {spelled}"
    );
    let huge = RegionKey::new("huge", "web", 3);
    let _: () = cmd(&["HSET", &seed_counters(&huge), "memories", "1", "last_success", "99999999999999999999"])
        .query(&mut con)
        .unwrap();
    let reports = run(&server.url(), &server.url(), Family::Dreams, Direction::Forward, false, &["big", "huge"]).await;
    assert!(reports[0].ok(), "{}", reports[0]);
    assert_eq!(hash(&mut con, "exocortex:dreams:{big}:counters:3:web")["settled_generation"], "123456789012345680");
    let fenced: (String, i64, i64) =
        cmd(&["DREAMS.RECORD", "big", "web", "3", "1", "0", "EVENT", "ev-2", "GENERATION", "123456789012345679"])
            .query(&mut con)
            .unwrap();
    assert_eq!(fenced, ("accumulated".to_string(), 0, 0), "a generation below the settled one counts nothing");
    let counted: (String, i64, i64) =
        cmd(&["DREAMS.RECORD", "big", "web", "3", "1", "0", "EVENT", "ev-3", "GENERATION", "123456789012345681"])
            .query(&mut con)
            .unwrap();
    assert_eq!((counted.1, counted.2), (1, 0), "a later one counts");
    assert!(!reports[1].ok());
    assert!(reports[1].errors.iter().any(|error| error.contains("last_success")), "{}", reports[1]);
    assert_eq!(hash(&mut con, &seed_counters(&huge))["last_success"], "99999999999999999999", "left with the seed");
    assert!(hash(&mut con, "exocortex:dreams:{huge}:counters:3:web").is_empty());
}

/// A seed key of the wrong type is refused and left where it is (the
/// tenant fails, exit 1, the rest of it moves); a target without the
/// module is refused before anything moves.
#[test]
fn wrong_types_and_a_target_without_the_module_are_refused() {
    let plain = Server::start_plain();
    let server = Server::start();
    let mut con = server.connect();
    seed_dreams_org(&mut con, "typed");
    let processing = SeedQueue::new("typed").processing;
    let held = list(&mut con, &processing);
    let _: () = cmd(&["DEL", &processing]).query(&mut con).unwrap();
    let _: () = cmd(&["SET", &processing, "not a list"]).query(&mut con).unwrap();
    let before = server.digest();
    assert_eq!(run_binary(&["--from", &server.url(), "--to", &plain.url(), "dreams", "typed"], None), 3);
    assert_eq!(server.digest(), before, "nothing moved to a target without the module");
    assert_eq!(run_binary(&["--from", &server.url(), "dreams", "typed"], None), 1);
    assert_eq!(cmd(&["GET", &processing]).query::<String>(&mut con).unwrap(), "not a list", "left where it is");
    let lengths: Vec<i64> = cmd(&["DREAMS.LEN", "typed"]).query(&mut con).unwrap();
    assert_eq!(lengths, vec![3, 1, 0], "the rest moved");
    let _: () = cmd(&["DEL", &processing]).query(&mut con).unwrap();
    let _: () = cmd(&["RPUSH", &processing, &held[0]]).query(&mut con).unwrap();
    assert_eq!(run_binary(&["--from", &server.url(), "dreams", "typed"], None), 0, "once fixed, a re-run moves it");
    let lengths: Vec<i64> = cmd(&["DREAMS.LEN", "typed"]).query(&mut con).unwrap();
    assert_eq!(lengths, vec![3, 1, 1]);
}

/// When the target refuses a batch (a key there under dreamtown's name has
/// the wrong type), the batch's keys go back where they were, exactly
/// (the old code never loses them); once fixed, a re-run moves them.
#[test]
fn a_refused_batch_goes_back_to_the_old_code() {
    let server = Server::start();
    let mut con = server.connect();
    seed_dreams_org(&mut con, "refused");
    let (agent, messages) = seed_town(&mut con, "refused");
    let _: () = cmd(&["SET", "exocortex:dreams:{refused}:deferred", "in the way"]).query(&mut con).unwrap();
    let _: () = cmd(&["SET", &format!("tt:{{refused}}:inbox:{agent}"), "in the way"]).query(&mut con).unwrap();
    let before = server.digest();
    assert_eq!(run_binary(&["--from", &server.url(), "dreams", "refused"], None), 1);
    assert_eq!(run_binary(&["--from", &server.url(), "town", "refused"], None), 1);
    assert_eq!(server.digest(), before, "everything is back where it was");
    let _: () = cmd(&["DEL", "exocortex:dreams:{refused}:deferred", &format!("tt:{{refused}}:inbox:{agent}")])
        .query(&mut con)
        .unwrap();
    assert_eq!(run_binary(&["--from", &server.url(), "dreams", "refused"], None), 0);
    assert_eq!(run_binary(&["--from", &server.url(), "town", "refused"], None), 0);
    let lengths: Vec<i64> = cmd(&["DREAMS.LEN", "refused"]).query(&mut con).unwrap();
    assert_eq!(lengths, vec![3, 1, 1]);
    let received: Vec<String> = cmd(&["TOWN.RECV", "refused", &agent, "COUNT", "10"]).query(&mut con).unwrap();
    assert_eq!(received, messages);
}

/// A partial agent record (tinytown's `HINCRBY` of `rounds_completed` /
/// `tasks_completed` on a fresh hash) adds to the target's counters
/// exactly, also above 2^53 (the apply script used Lua's doubles: 2^53 + 1
/// plus 2 came out as 2^53 + 2, and sums near 2^63 went wrong); a sum past
/// what dreamtown counts to (i64, where `TOWN.AGENT INCR` stops) refuses
/// the batch, nothing written, the source's keys back where they were.
#[tokio::test]
async fn agent_counters_add_exactly() {
    let server = Server::start();
    let mut con = server.connect();
    let agent = "00000000-0000-0000-0000-00000000000a";
    let target = format!("tt:{{exact}}:agent:{agent}");
    let _: () = cmd(&[
        "TOWN.AGENT",
        "SET",
        "exact",
        agent,
        "id",
        agent,
        "name",
        "backend",
        "rounds_completed",
        "9007199254740993",
        "tasks_completed",
        "4611686018427387904",
    ])
    .query(&mut con)
    .unwrap();
    let source = format!("tt:exact:agent:{agent}");
    let _: i64 = cmd(&["HINCRBY", &source, "rounds_completed", "2"]).query(&mut con).unwrap();
    let _: i64 = cmd(&["HINCRBY", &source, "tasks_completed", "4611686018427387903"]).query(&mut con).unwrap();
    let reports = run(&server.url(), &server.url(), Family::Town, Direction::Forward, false, &["exact"]).await;
    assert!(reports[0].ok(), "{}", reports[0]);
    let merged = hash(&mut con, &target);
    assert_eq!(merged["rounds_completed"], "9007199254740995", "2^53 + 1 + 2, exactly");
    assert_eq!(merged["tasks_completed"], "9223372036854775807", "2^62 + 2^62 - 1: i64's largest, exactly");
    assert_eq!(merged["name"], "backend", "the rest of the record is kept");
    let rounds: i64 = cmd(&["TOWN.AGENT", "INCR", "exact", agent, "ROUNDS"]).query(&mut con).unwrap();
    assert_eq!(rounds, 9_007_199_254_740_996, "dreamtown counts on from the exact sum");

    // One more task would pass i64: refused before anything is written.
    let _: i64 = cmd(&["HINCRBY", &source, "tasks_completed", "1"]).query(&mut con).unwrap();
    let _: i64 = cmd(&["HINCRBY", &source, "rounds_completed", "1"]).query(&mut con).unwrap();
    let before = server.digest();
    let reports = run(&server.url(), &server.url(), Family::Town, Direction::Forward, false, &["exact"]).await;
    assert!(!reports[0].ok());
    assert!(
        reports[0]
            .errors
            .iter()
            .any(|error| error.contains("tasks_completed") && error.contains("9223372036854775808")),
        "{}",
        reports[0]
    );
    assert_eq!(server.digest(), before, "nothing written, the source's keys back where they were");
}

/// tinytown allows ':' in town names, and its layout (`tt:<town>:...`)
/// does not say where the name ends. Towns whose names do not extend one
/// another move as they are, with `--all` too (an agent name with ':' is
/// only a field: found by `BYNAME`). Towns that do (`amb` and `amb:task`,
/// whose agent record `tt:amb:task:agent:<id>` used to move into `amb` as
/// a task) are refused, in the dry run already, each naming the other,
/// and nothing of either moves.
#[tokio::test]
async fn town_names_with_colons_move_only_when_unambiguous() {
    let server = Server::start();
    let mut con = server.connect();
    let alpha = uuid::Uuid::new_v4().to_string();
    let beta = uuid::Uuid::new_v4().to_string();
    tinytown_set_agent(&mut con, "team:alpha", &alpha, "ops:backend", None);
    tinytown_set_agent(&mut con, "team:beta", &beta, "frontend", None);
    let message = town_message(&alpha, "normal", "hello");
    let _: i64 = cmd(&["RPUSH", &format!("tt:team:alpha:inbox:{alpha}"), &message]).query(&mut con).unwrap();
    let before = server.digest();
    let reports = run(&server.url(), &server.url(), Family::Town, Direction::Forward, true, &[]).await;
    let towns: Vec<&str> = reports.iter().map(|report| report.tenant.as_str()).collect();
    assert_eq!(towns, vec!["team:alpha", "team:beta"], "--all finds both towns by their whole names");
    assert!(reports.iter().all(TenantReport::ok), "{reports:?}");
    assert_eq!(server.digest(), before);
    let reports = run(&server.url(), &server.url(), Family::Town, Direction::Forward, false, &[]).await;
    assert!(reports.iter().all(TenantReport::ok), "{reports:?}");
    assert!(keys(&mut con, "tt:team:*").is_empty(), "everything moved");
    let found: BTreeMap<String, String> =
        cmd(&["TOWN.AGENT", "BYNAME", "team:alpha", "ops:backend"]).query(&mut con).unwrap();
    assert_eq!(found.get("id"), Some(&alpha));
    let received: Vec<String> = cmd(&["TOWN.RECV", "team:alpha", &alpha, "COUNT", "10"]).query(&mut con).unwrap();
    assert_eq!(received, vec![message]);
    let agents: Vec<BTreeMap<String, String>> = cmd(&["TOWN.AGENT", "LIST", "team:beta"]).query(&mut con).unwrap();
    assert_eq!(agents.len(), 1);

    seed_town(&mut con, "amb");
    let nested = uuid::Uuid::new_v4().to_string();
    tinytown_set_agent(&mut con, "amb:task", &nested, "nested", None);
    let _: i64 = cmd(&["RPUSH", &format!("tt:amb:task:inbox:{nested}"), "m"]).query(&mut con).unwrap();
    let before = server.digest();
    for dry_run in [true, false] {
        for tenants in [&[][..], &["amb"][..], &["amb:task"][..]] {
            let reports = run(&server.url(), &server.url(), Family::Town, Direction::Forward, dry_run, tenants).await;
            if tenants.is_empty() {
                let towns: Vec<&str> = reports.iter().map(|report| report.tenant.as_str()).collect();
                assert_eq!(towns, vec!["amb", "amb:task"]);
            }
            for report in &reports {
                let other = if report.tenant == "amb" { "'amb:task'" } else { "'amb'" };
                assert!(!report.ok(), "{report}");
                assert!(
                    report.errors.iter().any(|error| error.contains("cannot keep them apart") && error.contains(other)),
                    "{report}"
                );
            }
            assert_eq!(server.digest(), before, "nothing of either town moved (dry run: {dry_run}, {tenants:?})");
        }
    }
}
