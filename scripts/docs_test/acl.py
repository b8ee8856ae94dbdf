"""ACL recipes: applied, then exercised as the user they create.

A recipe is a block of `ACL SETUSER <user> <rules...>` lines. Each is
applied on the page's server (`OK` required), and then every dreamtown
command and subcommand (and every other command the rules name, such as
the Town docket's stream commands) is run as that user, on the tenant the
rules' key patterns name (`{acme}`) and on another tenant. What each call
must get is worked out from the rules with Redis's ACL semantics, so a
recipe of any shape (selectors included) is held to what Redis promises:

* a call is allowed when one selector (the root rules or a `(...)`
  selector) allows the command (`+cmd`, `+cmd|sub`, `+@category` with the
  server's own categories of that command, `+@all`, in order, the last
  matching rule deciding), every key the call touches with the access it
  needs (`ACCESS` below, as docs/operations.md's table gives it: values
  read need `%R`, writes `%W`, a command that only looks at lengths any
  pattern; `~`, `%R~`, `%W~`, `%RW~`, `allkeys`) and every channel it
  publishes to (`&`, `allchannels`);
* a plain command (the docket's `XADD`, ...) is Redis's own: what
  `ACL DRYRUN` says of it is what the call must get;
* a dreamtown command touches its tenant's keys (`exocortex:dreams:{t}:...`,
  `tt:{t}:...`), taken here as one key per family, so patterns must cover a
  family's keys whole; `TOWN.BROADCAST` publishes on `tt:{t}:broadcast`.

An allowed call must not be refused with `NOPERM` (any other reply is the
command's business: the samples are valid calls); a refused one must be;
and `ACL DRYRUN` must give the same verdict as the model (the module
answers it with the keys and channels included). And a recipe
that grants some of a family must grant all of the family its keys allow
(a tenant user gets every command, a read-only user every read), unless the
page marks it partial (`<!-- docs-test: acl-partial -->`).
"""

import re

from . import resp

FIRE = '{"region":{"org":"%s","project":"web","memory_type":3},"fired_by":"node-a","fire_id":"00000000-0000-4000-8000-000000000000"}'
MESSAGE = '{"id":"acl-m1","from":"lead","to":"worker-1","priority":"normal"}'

# One valid call per command, in an order that works on an empty tenant.
# `%s` is the tenant. (name, sub) -> argv after the command's name.
SAMPLES = [
    ("dreams.fire", None, ["%s", "web", "3"]),
    ("dreams.record", None, ["%s", "web", "3", "1", "0"]),
    ("dreams.settle", None, ["%s", "web", "3", "outbox-1", "1"]),
    ("dreams.drain", None, ["%s", "0.01", "NOQUIET"]),
    ("dreams.ack", None, ["%s", FIRE, "SUCCESS"]),
    ("dreams.extend", None, ["%s", FIRE, "30"]),
    ("dreams.inflight", None, ["%s"]),
    ("dreams.recover", None, ["%s"]),
    ("dreams.redrive", None, ["%s"]),
    ("dreams.len", None, ["%s"]),
    ("dreams.counters", None, ["%s", "web", "3"]),
    ("dreams.stats", None, ["%s"]),
    ("dreams.limit", "set", ["%s", "CONCURRENCY", "5"]),
    ("dreams.limit", "get", ["%s"]),
    ("dreams.limit", "clear", ["%s"]),
    ("dreams.limit", "help", []),
    ("dreams.pause", None, ["%s"]),
    ("dreams.resume", None, ["%s"]),
    ("town.send", None, ["%s", MESSAGE]),
    ("town.recv", None, ["%s", "worker-1", "RELIABLE"]),
    ("town.extend", None, ["%s", "worker-1", "acl-m1", "30"]),
    ("town.ack", None, ["%s", "worker-1", "acl-m1"]),
    ("town.requeue", None, ["%s", "worker-1"]),
    ("town.len", None, ["%s", "worker-1"]),
    ("town.peek", None, ["%s", "worker-1", "10"]),
    ("town.reclaim", None, ["%s", "worker-1", "worker-2"]),
    ("town.broadcast", None, ["%s", '{"type":"shutdown"}']),
    ("town.stats", None, ["%s", "worker-1"]),
    ("town.stop", "request", ["%s", "worker-1"]),
    ("town.stop", "check", ["%s", "worker-1"]),
    ("town.stop", "clear", ["%s", "worker-1"]),
    ("town.stop", "help", []),
    ("town.agent", "set", ["%s", "worker-1", "id", "worker-1", "name", "backend"]),
    ("town.agent", "get", ["%s", "worker-1"]),
    ("town.agent", "list", ["%s"]),
    ("town.agent", "byname", ["%s", "backend"]),
    ("town.agent", "incr", ["%s", "worker-1", "ROUNDS"]),
    ("town.agent", "heartbeat", ["%s", "worker-1"]),
    ("town.agent", "del", ["%s", "worker-1"]),
    ("town.agent", "help", []),
    ("town.task", "set", ["%s", "t-1", "id", "t-1", "state", "pending"]),
    ("town.task", "get", ["%s", "t-1"]),
    ("town.task", "list", ["%s"]),
    ("town.task", "del", ["%s", "t-1"]),
    ("town.task", "help", []),
    ("town.activity", "log", ["%s", "worker-1", "did a thing"]),
    ("town.activity", "get", ["%s", "worker-1"]),
    ("town.activity", "help", []),
    ("town.backlog", "push", ["%s", "t-1"]),
    ("town.backlog", "list", ["%s"]),
    ("town.backlog", "len", ["%s"]),
    ("town.backlog", "pop", ["%s"]),
    ("town.backlog", "remove", ["%s", "t-1"]),
    ("town.backlog", "help", []),
    ("town.reset", None, ["%s", "AGENTS"]),
]
# Other commands a recipe may name: argv with `%s` for the tenant.
PLAIN = {
    "ping": ["PING"],
    "xgroup|create": ["XGROUP", "CREATE", "tt:{%s}:docket:tasks", "workers", "$", "MKSTREAM"],
    "xadd": ["XADD", "tt:{%s}:docket:tasks", "*", "task_id", "t-1"],
    "xreadgroup": ["XREADGROUP", "GROUP", "workers", "c1", "COUNT", "1", "STREAMS", "tt:{%s}:docket:tasks", ">"],
    "xack": ["XACK", "tt:{%s}:docket:tasks", "workers", "0-1"],
    "xlen": ["XLEN", "tt:{%s}:docket:tasks"],
    "xpending": ["XPENDING", "tt:{%s}:docket:tasks", "workers"],
    "xinfo|groups": ["XINFO", "GROUPS", "tt:{%s}:docket:tasks"],
    "xrange": ["XRANGE", "tt:{%s}:docket:tasks", "-", "+"],
    "xrevrange": ["XREVRANGE", "tt:{%s}:docket:tasks", "+", "-"],
}
FAMILY_KEY = {"dreams": "exocortex:dreams:{%s}:queue", "town": "tt:{%s}:inbox:worker-1"}

# What each command does with its tenant's keys (docs/operations.md, "The
# access each command needs"): (needs read, needs write).
META, READ, WRITE, READWRITE = (False, False), (True, False), (False, True), (True, True)
ACCESS = {
    ("dreams.fire", None): WRITE,
    ("dreams.record", None): READWRITE,
    ("dreams.settle", None): READWRITE,
    ("dreams.drain", None): READWRITE,
    ("dreams.ack", None): READWRITE,
    ("dreams.extend", None): READWRITE,
    ("dreams.recover", None): READWRITE,
    ("dreams.len", None): META,
    ("dreams.counters", None): READ,
    ("dreams.inflight", None): READ,
    ("dreams.redrive", None): READWRITE,
    ("dreams.stats", None): READ,
    ("dreams.limit", "set"): READWRITE,
    ("dreams.limit", "get"): READ,
    ("dreams.limit", "clear"): READWRITE,
    ("dreams.pause", None): READWRITE,
    ("dreams.resume", None): READWRITE,
    ("town.send", None): WRITE,
    ("town.recv", None): READWRITE,
    ("town.ack", None): READWRITE,
    ("town.requeue", None): READWRITE,
    ("town.extend", None): READWRITE,
    ("town.reclaim", None): READWRITE,
    ("town.reset", None): READWRITE,
    ("town.len", None): META,
    ("town.peek", None): READ,
    ("town.stats", None): READ,
    ("town.stop", "request"): WRITE,
    ("town.stop", "check"): META,
    ("town.stop", "clear"): WRITE,
    ("town.agent", "set"): WRITE,
    ("town.agent", "get"): READ,
    ("town.agent", "del"): WRITE,
    ("town.agent", "list"): READ,
    ("town.agent", "byname"): READ,
    ("town.agent", "incr"): READWRITE,
    ("town.agent", "heartbeat"): WRITE,
    ("town.task", "set"): WRITE,
    ("town.task", "get"): READ,
    ("town.task", "del"): WRITE,
    ("town.task", "list"): READ,
    ("town.backlog", "push"): WRITE,
    ("town.backlog", "pop"): READWRITE,
    ("town.backlog", "list"): READ,
    ("town.backlog", "len"): META,
    ("town.backlog", "remove"): WRITE,
    ("town.activity", "log"): WRITE,
    ("town.activity", "get"): READ,
}


def glob_regex(pattern):
    """Redis's stringmatchlen glob as a regex."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        elif c == "[":
            j = pattern.find("]", i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j]
                if body.startswith("^"):
                    body = "^" + body[1:].replace("\\", "\\\\")
                else:
                    body = body.replace("\\", "\\\\")
                out.append("[%s]" % body)
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.S)


class Selector:
    def __init__(self, pubsub_default):
        self.commands = []  # (allow, kind, value) in order
        self.keys = []  # (regex, read, write, pattern)
        self.channels = []  # regex
        self.all_channels = pubsub_default == "allchannels"

    def rule(self, token):
        t = token.lower()
        if t in ("allcommands", "+@all"):
            self.commands.append((True, "all", None))
        elif t in ("nocommands", "-@all"):
            self.commands.append((False, "all", None))
        elif t[:1] in "+-" and t[1:2] == "@":
            self.commands.append((t[0] == "+", "category", t[2:]))
        elif t[:1] in "+-":
            self.commands.append((t[0] == "+", "command", t[1:]))
        elif t == "allkeys":
            self.keys.append((glob_regex("*"), True, True, "*"))
        elif t == "resetkeys":
            self.keys = []
        elif t.startswith("~"):
            self.keys.append((glob_regex(token[1:]), True, True, token[1:]))
        elif t.startswith("%"):
            flags, _, pattern = token[1:].partition("~")
            self.keys.append((glob_regex(pattern), "R" in flags.upper(), "W" in flags.upper(), pattern))
        elif t == "allchannels":
            self.all_channels = True
            self.channels = []
        elif t == "resetchannels":
            self.all_channels = False
            self.channels = []
        elif t.startswith("&"):
            self.channels.append(glob_regex(token[1:]))
        else:
            return False
        return True

    def allows_command(self, name, sub, categories):
        verdict = False
        full = name + ("|" + sub if sub else "")
        for allow, kind, value in self.commands:
            if (kind == "all" or (kind == "category" and value in categories)
                    or (kind == "command" and value in (name, full))):
                verdict = allow
        return verdict

    def allows_key(self, key, need):
        """`need`: (read, write). A key whose lengths alone are looked at
        needs only a matching pattern."""
        need_read, need_write = need
        return any(r.match(key) and (read or not need_read) and (w or not need_write) for r, read, w, _ in self.keys)

    def allows_channel(self, channel):
        return self.all_channels or any(r.match(channel) for r in self.channels)


class User:
    """An ACL SETUSER's rules, as a model."""

    def __init__(self, name, tokens, pubsub_default):
        self.name = name
        self.passwords, self.nopass, self.on = [], False, False
        self.selectors = [Selector(pubsub_default)]
        self.pubsub_default = pubsub_default
        for token in merge_selectors(tokens):
            self.rule(token)

    def rule(self, token):
        t = token.lower()
        root = self.selectors[0]
        if token.startswith("(") and token.endswith(")"):
            s = Selector(self.pubsub_default)
            for part in token[1:-1].split():
                if not s.rule(part):
                    raise ValueError("unknown selector rule %r" % part)
            self.selectors.append(s)
        elif t == "on":
            self.on = True
        elif t == "off":
            self.on = False
        elif token.startswith(">"):
            self.passwords.append(token[1:])
        elif token.startswith("<"):
            self.passwords = [p for p in self.passwords if p != token[1:]]
        elif t == "nopass":
            self.nopass = True
        elif t == "resetpass":
            self.passwords, self.nopass = [], False
        elif t == "clearselectors":
            self.selectors = [root]
        elif t == "reset":
            self.__init__(self.name, [], self.pubsub_default)
            self.selectors[0].rule("resetchannels")
        elif not root.rule(token):
            raise ValueError("unknown ACL rule %r" % token)

    def tenants(self):
        found = []
        for s in self.selectors:
            for _, _, _, pattern in s.keys:
                named = re.findall(r"\{([^{}*?\[\]]+)\}", pattern)
                # A pattern over a whole family (`exocortex:dreams:*`, `tt:*`)
                # covers every tenant: one stands for them all.
                if not named and re.fullmatch(r"(exocortex:dreams:|tt:)\*", pattern):
                    named = ["any-tenant"]
                for t in named:
                    if t not in found:
                        found.append(t)
        return found

    def allows(self, name, sub, categories, keys, channels):
        for s in self.selectors:
            if (s.allows_command(name, sub, categories) and all(s.allows_key(k, w) for k, w in keys)
                    and all(s.allows_channel(c) for c in channels)):
                return True
        return False

    def allows_command(self, name, sub, categories):
        return any(s.allows_command(name, sub, categories) for s in self.selectors)


def merge_selectors(tokens):
    """Redis merges a selector split over several arguments: `(~a* +get)`."""
    out, current = [], None
    for token in tokens:
        if current is not None:
            current += " " + token
            if token.endswith(")"):
                out.append(current)
                current = None
        elif token.startswith("(") and not token.endswith(")"):
            current = token
        else:
            out.append(token)
    if current is not None:
        raise ValueError("unterminated selector: %s" % current)
    return out


def command_table(conn):
    """Every dreamtown command and subcommand: {(name, sub): (flags, categories)}."""
    table = {}
    names = [n.decode().lower() for n in conn.call("COMMAND", "LIST", "FILTERBY", "PATTERN", "*.*")]
    tops = sorted({n.split("|")[0] for n in names if n.startswith(("dreams.", "town."))})
    return table_of(conn, tops, table)


def table_of(conn, names, table):
    for info in conn.call("COMMAND", "INFO", *names):
        if info is None:
            continue
        name = info[0].decode().lower()
        subs = info[9] if len(info) > 9 else []
        if subs:
            for s in subs:
                sub = s[0].decode().lower().split("|", 1)[1]
                table[(name, sub)] = (_strings(s[2]), _categories(s[6]))
        else:
            table[(name, None)] = (_strings(info[2]), _categories(info[6]))
    return table


def _strings(values):
    return {v.decode().lower() if isinstance(v, bytes) else str(v).lower() for v in values}


def _categories(values):
    return {c.lstrip("@") for c in _strings(values)}


def plain_table(conn, names):
    table = {}
    tops = sorted({n.split("|")[0] for n in names})
    for info in conn.call("COMMAND", "INFO", *tops):
        if info is None:
            continue
        name = info[0].decode().lower()
        table[(name, None)] = (_strings(info[2]), _categories(info[6]))
        for s in info[9] if len(info) > 9 else []:
            table[(name, s[0].decode().lower().split("|", 1)[1])] = (_strings(s[2]), _categories(s[6]))
    return table


class Recipe:
    """Applies and exercises the ACL SETUSER lines of one block."""

    def __init__(self, server_connect, substitute):
        self.connect = server_connect
        self.substitute = substitute
        self.failures = []
        self.calls = 0

    def run(self, block, partial):
        admin = self.connect()
        try:
            pubsub_default = admin.call("CONFIG", "GET", "acl-pubsub-default")[1].decode()
            modules = command_table(admin)
            for offset, line in enumerate(block.lines):
                if not line.strip():
                    continue
                where = block.where(offset)
                args = [self.substitute(a) for a in resp.split_args(line)]
                if len(args) < 3 or [a.lower() for a in args[:2]] != [b"acl", b"setuser"]:
                    self.failures.append("%s: not an ACL SETUSER line: %s" % (where, line))
                    continue
                name = args[2].decode()
                admin.call("ACL", "DELUSER", name)
                reply = admin.call(*args)
                if reply != "OK":
                    self.failures.append("%s: %s -> %s" % (where, line, reply))
                    continue
                user = User(name, [a.decode() for a in args[3:]], pubsub_default)
                self.exercise(where, admin, user, modules, partial)
        finally:
            admin.close()

    def exercise(self, where, admin, user, modules, partial):
        tenants = user.tenants()
        if not tenants:
            self.failures.append("%s: %s: no tenant in the key patterns ({name})" % (where, user.name))
            return
        tenant = tenants[0]
        other = "other-" + tenant
        plain_names = [n for n in PLAIN if self._named(user, n)]
        table = dict(modules)
        table.update(plain_table(admin, plain_names))
        missing = [k for k in modules if not any((n, s) == k for n, s, _ in SAMPLES)]
        if missing:
            self.failures.append("%s: no sample call for %s in scripts/docs_test/acl.py"
                                 % (where, ", ".join(n + ("|" + s if s else "") for n, s in missing)))
        calls = [(n, s, [n.upper()] + ([s.upper()] if s else []) + argv) for n, s, argv in SAMPLES if (n, s) in modules]
        calls += [(n.split("|")[0], n.split("|")[1] if "|" in n else None, PLAIN[n]) for n in plain_names]
        conn = self.connect()
        try:
            password = user.passwords[0] if user.passwords else "any"
            reply = conn.call("AUTH", user.name, password)
            if reply != "OK":
                self.failures.append("%s: AUTH %s: %s" % (where, user.name, reply))
                return
            granted = {}
            for name, sub, template in calls:
                flags, categories = table[(name, sub)]
                for t in (tenant, other):
                    argv = [a % t if "%s" in a else a for a in template]
                    keys, channels = self._touches(name, sub, flags, argv, t)
                    if t == other and not keys and not channels:
                        continue
                    module = name.split(".")[0] in FAMILY_KEY
                    if module:
                        want = user.allows(name, sub, categories, keys, channels)
                    else:
                        # Redis checks its own commands' keys itself, by
                        # their key specs: ACL DRYRUN is the authority.
                        want = admin.call("ACL", "DRYRUN", user.name, *argv) == "OK"
                    if t == tenant:
                        granted[(name, sub)] = user.allows_command(name, sub, categories)
                    if module:
                        # The module answers ACL DRYRUN of its commands with
                        # their keys and channels: the call's whole verdict.
                        dry = admin.call("ACL", "DRYRUN", user.name, *argv)
                        if (dry == "OK") != want:
                            self.failures.append("%s: %s: ACL DRYRUN %s says %s; the rules, read here, say %s"
                                                 % (where, user.name, _show(argv), dry,
                                                    "allowed" if want else "refused"))
                    got = conn.call(*argv)
                    self.calls += 1
                    refused = isinstance(got, resp.Error) and got.startswith("NOPERM")
                    if refused == want:
                        label = "allowed" if want else "refused"
                        self.failures.append("%s: %s: %s should be %s by the rules, got %s"
                                             % (where, user.name, _show(argv), label, got))
            if not partial:
                self._complete(where, user, modules, granted)
        finally:
            conn.close()

    @staticmethod
    def _named(user, name):
        base = name.split("|")[0]
        return any(kind == "command" and value in (name, base) and allow
                   for s in user.selectors for allow, kind, value in s.commands)

    @staticmethod
    def _touches(name, sub, flags, argv, tenant):
        family = name.split(".")[0]
        if family in FAMILY_KEY:
            if sub == "help":
                return [], []
            if name == "town.broadcast":
                return [], ["tt:{%s}:broadcast" % tenant]
            return [(FAMILY_KEY[family] % tenant, ACCESS[(name, sub)])], []
        need = READWRITE if "write" in flags else READ
        keys = [a for a in argv if "{" in a]
        return [(k, need) for k in keys], []

    def _complete(self, where, user, modules, granted):
        tenant = user.tenants()[0]
        for family in ("dreams", "town"):
            cmds = [k for k in modules if k[0].startswith(family + ".") and k[1] != "help"]
            if not any(granted.get(k) for k in cmds):
                continue
            lacking = []
            for name, sub in cmds:
                flags, _ = modules[(name, sub)]
                keys, channels = self._touches(name, sub, flags, [], tenant)
                usable = any(all(s.allows_key(k, w) for k, w in keys) and all(s.allows_channel(c) for c in channels)
                             for s in user.selectors)
                if usable and not granted.get((name, sub)):
                    lacking.append(name.upper() + (" " + sub.upper() if sub else ""))
            if lacking:
                self.failures.append("%s: %s may use %s's keys but is not granted: %s (or mark the recipe "
                                     "<!-- docs-test: acl-partial -->)" % (where, user.name, family.upper(),
                                                                          ", ".join(lacking)))


def _show(argv):
    text = " ".join(argv)
    return text if len(text) < 90 else text[:87] + "..."
