"""Servers for the docs test: one per page, with the module loaded, and a
3-master cluster for pages that use one. Free loopback ports; the docs'
own ports (6390, 7001-7003) are mapped onto them."""

import os
import random
import shutil
import socket
import subprocess
import tempfile
import time

from . import resp


def port_free(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(bus=False):
    """A free port (and its cluster bus port, port + 10000, with `bus`)."""
    for _ in range(1000):
        port = random.randint(20000, 29999 if bus else 45000)
        if port_free(port) and (not bus or port_free(port + 10000)):
            return port
    raise RuntimeError("no free port")


class Server:
    """A server with the module; stopped by `stop()`."""

    def __init__(self, binary, module, args=(), cluster=False, config_file=None, module_args=()):
        self.binary, self.module = binary, module
        self.dir = tempfile.mkdtemp(prefix="docs-test-")
        self.port = free_port(bus=cluster)
        self.log = os.path.join(self.dir, "server.log")
        argv = [binary]
        if config_file:
            argv.append(config_file)
        argv += ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", self.dir, "--logfile", self.log]
        if module:
            argv += ["--loadmodule", module, *module_args]
        if cluster:
            argv += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
        argv += list(args)
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT)
        try:
            self._wait()
        except Exception:
            self.stop()
            raise

    def _wait(self):
        end = time.time() + 30
        while True:
            if self.process.poll() is not None:
                raise RuntimeError("%s exited (%s):\n%s" % (self.binary, self.process.returncode, self.output()))
            try:
                resp.wait_for(self.port, deadline=0.2)
                return
            except TimeoutError:
                pass
            if time.time() > end:
                raise RuntimeError("%s did not answer PING:\n%s" % (self.binary, self.output()))

    def output(self):
        text = ""
        if self.process.stdout and self.process.poll() is not None:
            text += self.process.stdout.read().decode(errors="replace")
        if os.path.exists(self.log):
            with open(self.log, errors="replace") as f:
                text += f.read()
        return "\n".join(text.strip().split("\n")[-15:])

    def connect(self):
        return resp.Connection(self.port)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Cluster:
    """Three masters with the module, every slot assigned, state ok."""

    def __init__(self, binary, module):
        self.nodes = []
        try:
            for _ in range(3):
                self.nodes.append(Server(binary, module, cluster=True))
            conns = [n.connect() for n in self.nodes]
            bounds = [(0, 5460), (5461, 10922), (10923, 16383)]
            for conn, (first, last) in zip(conns, bounds):
                reply = conn.call("CLUSTER", "ADDSLOTSRANGE", str(first), str(last))
                if reply != "OK":
                    raise RuntimeError("CLUSTER ADDSLOTSRANGE: %s" % reply)
            for node in self.nodes[1:]:
                conns[0].call("CLUSTER", "MEET", "127.0.0.1", str(node.port))
            end = time.time() + 30
            while True:
                states = [c.call("CLUSTER", "INFO").decode() for c in conns]
                known = [c.call("CLUSTER", "NODES").decode().count("connected") for c in conns]
                if all("cluster_state:ok" in s for s in states) and all(k == 3 for k in known):
                    break
                if time.time() > end:
                    raise RuntimeError("the cluster did not come up: %s" % states)
                time.sleep(0.1)
            for c in conns:
                c.close()
        except Exception:
            self.stop()
            raise

    @property
    def ports(self):
        return [n.port for n in self.nodes]

    def stop(self):
        for n in self.nodes:
            n.stop()
