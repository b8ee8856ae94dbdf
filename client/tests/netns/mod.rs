//! Test hosts in network namespaces: a bridge, one namespace per host with a
//! veth pair to the bridge and an address in 10.77.0.0/24, servers started
//! inside their host with `ip netns exec`, and the faults a network makes
//! (a cut between two groups of hosts, a one-way cut, a slow link that drops
//! what overflows it).
//!
//! Names carry the test process id and a counter, so concurrent runs never
//! share a bridge or a namespace; the bridge has no address and the root
//! namespace no route to 10.77.0.0/24, so each run's hosts see only each
//! other (the same addresses in two runs never meet). A [`Net`] removes
//! everything it made when dropped (on a panic too): it kills its servers
//! by pid, then deletes its namespaces (their veth pairs go with them) and
//! its bridge. A run killed outright takes its servers with it (parent-death
//! signal) but leaves names behind; the next run removes those whose
//! process is gone, and anything still running in them ([`sweep_stale`]).
//!
//! Code that talks to a host runs in a thread that joined another host's
//! namespace ([`in_host`]): a socket belongs to the namespace of the thread
//! that created it, and children spawned from it start there too.

#![allow(dead_code)]

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Prefix of everything a run creates: `dt` + a kind letter (`n`amespace,
/// `b`ridge, `v`eth, veth `p`eer) + `<pid in hex>x<n>`.
const PREFIX: &str = "dt";

/// Is this machine able to run the tests (root, `ip` and `tc` present)?
pub fn available() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    for tool in ["ip", "tc"] {
        if Command::new(tool).arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
            return Err(format!("`{tool}` not found (Debian package iproute2)"));
        }
    }
    Ok(())
}

/// The namespace the test process started in (its main thread's: only
/// threads made by [`in_host`] ever move), held open.
fn root_ns() -> &'static File {
    static ROOT: std::sync::OnceLock<File> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| File::open("/proc/self/ns/net").expect("open /proc/self/ns/net"))
}

/// A command that runs in the root namespace, whichever thread spawns it
/// (the bridge and the root ends of the veth pairs live there).
fn command(program: &str) -> Command {
    use std::os::unix::process::CommandExt;
    let fd = root_ns().as_raw_fd();
    let mut command = Command::new(program);
    // SAFETY: setns(2) is async-signal-safe; the fd stays open for the process's life.
    unsafe {
        command.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        });
    }
    command
}

/// Run a command; panic with its output when it fails.
fn run(args: &[&str]) {
    let output = command(args[0]).args(&args[1..]).stdin(Stdio::null()).output().expect("spawn");
    assert!(output.status.success(), "{} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
}

/// Run a command, ignoring failure (cleanup of what may be gone already).
fn run_quiet(args: &[&str]) {
    let _ = command(args[0]).args(&args[1..]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
}

/// Remove namespaces and bridges of runs whose process is gone.
pub fn sweep_stale() {
    let Ok(out) = command("ip").args(["netns", "list"]).output() else { return };
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let links = command("ip").args(["-o", "link", "show", "type", "bridge"]).output();
    let links = links.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let names = listing
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|n| (n.to_string(), true))
        .chain(links.lines().filter_map(|l| l.split(": ").nth(1)).map(|n| (n.to_string(), false)));
    for (name, is_ns) in names {
        let kind = if is_ns { "n" } else { "b" };
        let Some(rest) = name.strip_prefix(&format!("{PREFIX}{kind}")) else { continue };
        let Some(pid) = rest.split('x').next().and_then(|p| u32::from_str_radix(p, 16).ok()) else { continue };
        if PathBuf::from(format!("/proc/{pid}")).exists() {
            continue;
        }
        if is_ns {
            // Servers of a run killed outright still run in its namespace.
            if let Ok(out) = command("ip").args(["netns", "pids", &name]).output() {
                for pid in String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse::<i32>().ok())
                {
                    // SAFETY: kill(2); the pid lives in a namespace only our runs create.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            run_quiet(&["ip", "netns", "del", &name]);
        } else {
            run_quiet(&["ip", "link", "del", &name]);
        }
    }
}

/// One test host: a namespace and its address.
#[derive(Clone, Debug)]
pub struct Host {
    pub name: String,
    pub ns: String,
    pub ip: String,
    /// The root-side end of its veth pair.
    veth: String,
}

/// A bridge and the hosts on it; dropped, it removes them and kills their servers.
pub struct Net {
    id: String,
    bridge: String,
    pub hosts: Vec<Host>,
    servers: Vec<Child>,
    /// Cuts and qdiscs in place, to undo on heal.
    blackholes: Vec<(String, String)>,
    qdiscs: Vec<Host>,
    pub dir: PathBuf,
}

impl Net {
    /// A new bridge with no hosts.
    pub fn new() -> Net {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        root_ns();
        sweep_stale();
        let id = format!("{:x}x{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let bridge = format!("{PREFIX}b{id}");
        assert!(bridge.len() <= 15, "interface name too long: {bridge}");
        let dir = std::env::temp_dir().join(format!("dreamtown-netns-{id}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        let net =
            Net { id, bridge, hosts: Vec::new(), servers: Vec::new(), blackholes: Vec::new(), qdiscs: Vec::new(), dir };
        run(&["ip", "link", "add", &net.bridge, "type", "bridge"]);
        run(&["ip", "link", "set", &net.bridge, "up"]);
        net
    }

    /// A new host `name` on the bridge, with the next address.
    pub fn add_host(&mut self, name: &str) -> Host {
        let index = self.hosts.len() + 1;
        let ns = format!("{PREFIX}n{}-{index}", self.id);
        let veth = format!("{PREFIX}v{}-{index}", self.id);
        let peer = format!("{PREFIX}p{}-{index}", self.id);
        assert!(veth.len() <= 15, "interface name too long: {veth}");
        let ip = format!("10.77.0.{index}");
        // Pushed first so Drop removes it even if a step below fails.
        let host = Host { name: name.into(), ns: ns.clone(), ip: ip.clone(), veth: veth.clone() };
        self.hosts.push(host.clone());
        run(&["ip", "netns", "add", &ns]);
        run(&["ip", "link", "add", &veth, "type", "veth", "peer", "name", &peer]);
        run(&["ip", "link", "set", &peer, "netns", &ns]);
        run(&["ip", "-n", &ns, "link", "set", &peer, "name", "eth0"]);
        run(&["ip", "-n", &ns, "addr", "add", &format!("{ip}/24"), "dev", "eth0"]);
        run(&["ip", "-n", &ns, "link", "set", "eth0", "up"]);
        run(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
        run(&["ip", "link", "set", &veth, "master", &self.bridge]);
        run(&["ip", "link", "set", &veth, "up"]);
        host
    }

    /// Start `program args` inside `host` (`ip netns exec` execs it: the pid is the server's).
    pub fn spawn_in(&mut self, host: &Host, program: &str, args: &[String], log: &str) -> u32 {
        use std::os::unix::process::CommandExt;
        let log = File::create(self.dir.join(log)).expect("log file");
        let mut command = command("ip");
        // If the test process dies outright (SIGKILL), its servers die with
        // it: the signal comes when the spawning thread ends, and every
        // spawning thread outlives its Net (which kills them first anyway).
        // SAFETY: prctl(2) is async-signal-safe; it survives the exec.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        let child = command
            .args(["netns", "exec", &host.ns, program])
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("ip netns exec");
        let pid = child.id();
        self.servers.push(child);
        pid
    }

    /// Kill the server `pid` started by [`spawn_in`](Self::spawn_in) and reap it.
    pub fn kill(&mut self, pid: u32) {
        if let Some(at) = self.servers.iter().position(|c| c.id() == pid) {
            let mut child = self.servers.remove(at);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Cut every host of `a` from every host of `b`, both ways: packets are
    /// dropped silently (a blackhole route on each side), as a switch that
    /// lost a link would. Hosts on neither list still reach both.
    pub fn cut(&mut self, a: &[&Host], b: &[&Host]) {
        for x in a {
            for y in b {
                self.cut_one_way(x, y);
                self.cut_one_way(y, x);
            }
        }
    }

    /// `from` can no longer send to `to` (`to` still sends to `from`).
    pub fn cut_one_way(&mut self, from: &Host, to: &Host) {
        run(&["ip", "-n", &from.ns, "route", "add", "blackhole", &format!("{}/32", to.ip)]);
        self.blackholes.push((from.ns.clone(), to.ip.clone()));
    }

    /// Every packet in and out of `host` goes through the qdisc `spec`
    /// (e.g. `tbf rate 64kbit burst 2000 limit 4000`: a slow link that drops
    /// what overflows its queue), on both ends of its link. (`netem` would
    /// make random loss, but this kernel has no `sch_netem`; `tbf` is there.)
    pub fn degrade(&mut self, host: &Host, spec: &str) {
        let spec: Vec<&str> = spec.split_whitespace().collect();
        let mut inside = vec!["tc", "-n", &host.ns, "qdisc", "add", "dev", "eth0", "root"];
        inside.extend(&spec);
        run(&inside);
        let mut outside = vec!["tc", "qdisc", "add", "dev", &host.veth, "root"];
        outside.extend(&spec);
        run(&outside);
        self.qdiscs.push(host.clone());
    }

    /// Undo every cut and qdisc.
    pub fn heal(&mut self) {
        for (ns, ip) in std::mem::take(&mut self.blackholes) {
            run(&["ip", "-n", &ns, "route", "del", "blackhole", &format!("{ip}/32")]);
        }
        for host in std::mem::take(&mut self.qdiscs) {
            run(&["tc", "-n", &host.ns, "qdisc", "del", "dev", "eth0", "root"]);
            run(&["tc", "qdisc", "del", "dev", &host.veth, "root"]);
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for mut child in self.servers.drain(..) {
            // SIGKILL ends a stopped process too; SIGCONT first lets its
            // kernel state unwind at once.
            let pid = child.id() as libc::pid_t;
            // SAFETY: signalling a child we spawned and have not reaped.
            unsafe { libc::kill(pid, libc::SIGCONT) };
            let _ = child.kill();
            let _ = child.wait();
        }
        for host in &self.hosts {
            run_quiet(&["ip", "netns", "del", &host.ns]);
            run_quiet(&["ip", "link", "del", &host.veth]);
        }
        run_quiet(&["ip", "link", "del", &self.bridge]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Send `signal` to `pid` (SIGSTOP/SIGCONT/SIGKILL).
pub fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) on a pid we started.
    let rc = unsafe { libc::kill(pid as libc::pid_t, signal) };
    assert_eq!(rc, 0, "kill({pid}, {signal})");
}

/// Run `f` in a new thread that joined `host`'s namespace; its result, or its panic.
pub fn in_host<T: Send + 'static>(host: &Host, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<T> {
    let path = format!("/var/run/netns/{}", host.ns);
    std::thread::Builder::new()
        .name(format!("in-{}", host.name))
        .spawn(move || {
            enter(&path);
            f()
        })
        .expect("thread")
}

/// Move the calling thread into the namespace at `path`.
fn enter(path: &str) {
    let file = File::open(path).unwrap_or_else(|e| panic!("open {path}: {e}"));
    // SAFETY: setns on a namespace fd we hold open; affects this thread only.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
}

/// Poll `condition` every 50 ms until it holds; panic with `what` after `deadline`.
pub fn wait_for(what: &str, deadline: Duration, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < deadline, "timed out after {deadline:?} waiting for: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
