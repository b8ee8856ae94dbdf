//! The ACL recipe of docs/client.md through the client: a tenant user
//! connects with the `redis` crate, does its organization's Dreams work, and
//! gets a typed `NOPERM` for another organization, with nothing changed.

mod common;

use std::time::Duration;

use common::{Server, tenant};
use dreamtown_client::dreams::{AcknowledgeOutcome, DrainResult, DreamsTrigger, QuietHours, RedisFireQueue, RegionKey};

/// The recipe's rules for `org` (docs/client.md, "ACL").
fn tenant_rules(org: &str) -> Vec<String> {
    let rules = format!(
        "on >secret resetkeys ~exocortex:dreams:{{{org}}}:* ~tt:{{{org}}}:* resetchannels &tt:{{{org}}}:* \
         -@all +dreams.fire +dreams.record +dreams.settle +dreams.drain +dreams.ack +dreams.recover \
         +dreams.len +dreams.counters +ping"
    );
    rules.split_whitespace().map(str::to_owned).collect()
}

#[tokio::test]
async fn a_tenant_user_works_its_own_queue_and_gets_a_typed_noperm_elsewhere() {
    let server = Server::start();
    let (own, other) = (tenant("acl-own"), tenant("acl-other"));
    let mut admin = server.connect();
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg("tenant-own").arg(tenant_rules(&own));
    setuser.query::<()>(&mut admin).unwrap();
    redis::cmd("DREAMS.FIRE").arg(&other).arg("web").arg(1).query::<String>(&mut admin).unwrap();

    let conn = server.multiplexed_as("tenant-own", "secret").await;
    let mut mine = RedisFireQueue::new(conn.clone(), QuietHours::none(), own.clone());
    mine.fire(&RegionKey::new(own.as_str(), "web", 1), "node-a").await.unwrap();
    let DrainResult::Ready(fire) = mine.drain(Duration::from_secs(1)).await.unwrap() else {
        panic!("its own fire is ready")
    };
    let acked = mine.acknowledge(&fire, true, DreamsTrigger::default(), "node-a").await.unwrap();
    assert!(matches!(acked, AcknowledgeOutcome::Acknowledged(_)));
    assert_eq!(mine.recover_inflight().await.unwrap(), 0);

    let before = server.digest();
    let mut theirs = RedisFireQueue::new(conn, QuietHours::none(), other.clone());
    let region = RegionKey::new(other.as_str(), "web", 1);
    let refused = [
        theirs.fire(&region, "node-a").await.map(drop),
        theirs.drain(Duration::from_secs(1)).await.map(drop),
        theirs.recover_inflight().await.map(drop),
        theirs.lengths().await.map(drop),
        theirs.counters(&region).await.map(drop),
    ];
    for result in refused {
        let error = result.expect_err("another organization is refused");
        assert!(error.is_no_permission(), "{error}");
        assert!(error.to_string().contains(&format!("{{{other}}}")), "the refusal names the key: {error}");
    }
    assert_eq!(server.digest(), before, "nothing changed");
}
