#!/usr/bin/env python3
"""Many fake IPMI BMCs in one process (PyPI pyghmi; machines that are a power state only, as in fakebmc.py without --vm),
for the API benchmark at 1,000 nodes: one BMC per node, as a real cloud has, without a process each.
Each is fakebmc.py's LoopbackBmc (imported from beside this script).

Usage: fakebmcs.py FIRST COUNT [USER PASS]     e.g. fakebmcs.py 127.0.1.1 250 admin benchpw
       fakebmcs.py --spec FILE                  each BMC as FILE (JSON) describes it (issue #51's tests)
Serves COUNT loopback addresses from FIRST upwards (127.a.b.c, c runs 1..254 then b goes up) on port
623, every machine powered off at start. pyghmi's Bmc.listen() serves every Bmc of the process from one
loop; its sessions are select()ed, so keep COUNT well under 1,000 per process (file descriptors).
Prints "power on" / "power off" with the address when Ironic changes a power state, and "ipmi NAME
ADDRESS" for every IPMI command a session sends (fakebmc.py's COMMANDS).
--spec FILE: a JSON list, one object a BMC: {"addr": "127.0.5.1", "user": "admin", "password": "pw",
"power": "on"|"off", "guid": "<uuid>" (random if absent), "silent": true (bound, never answers),
"max_privilege": 3 (its user is an OPERATOR: ADMINISTRATOR is refused)};
"port" is 623 unless given.
Run with the Ironic test venv (scripts/ironic.sh installs pyghmi there).
"""
import ipaddress
import json
import os
import signal
import socket
import sys

from fakebmc import LoopbackBmc  # the same machine as fakebmc.py's, beside this script


def addresses(first, count):
    a = ipaddress.IPv4Address(first)
    out = []
    while len(out) < count:
        if not str(a).startswith('127.'):
            raise SystemExit('fakebmcs.py: loopback addresses only')
        if str(a).split('.')[-1] not in ('0', '255'):
            out.append(str(a))
        a += 1
    return out


def from_spec(path):
    """The BMCs FILE describes, and the silent ones' sockets (kept open: bound, never read)."""
    bmcs, silent = [], []
    for b in json.load(open(path)):
        addr, port = b['addr'], int(b.get('port', 623))
        if not addr.startswith('127.'):
            raise SystemExit('fakebmcs.py: loopback addresses only, not ' + addr)
        if b.get('silent'):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((addr, port))
            silent.append(s)
            continue
        bmcs.append(LoopbackBmc({b.get('user', 'admin'): b.get('password', 'password')}, port, addr,
                                b.get('power', 'off'), name=addr, guid=b.get('guid'),
                                max_privilege=b.get('max_privilege')))
    return bmcs, silent


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--spec':
        bmcs, _silent = from_spec(sys.argv[2])
        first = bmcs[0].addr
    elif len(sys.argv) >= 3:
        first, count = sys.argv[1], int(sys.argv[2])
        user = sys.argv[3] if len(sys.argv) > 3 else 'admin'
        password = sys.argv[4] if len(sys.argv) > 4 else 'password'
        bmcs = [LoopbackBmc({user: password}, 623, a, 'off', name=a) for a in addresses(first, count)]
    else:
        raise SystemExit(__doc__)
    # pyghmi's I/O thread started select()ing on the first BMC's socket alone, and its own wake-up
    # goes to [::1]:623, where nothing of ours listens: until a packet reaches the first BMC the
    # others are deaf (a client of the second BMC timed out). A packet to the first wakes it, and it
    # select()s on every socket from then on.
    poke = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    poke.sendto(b'\x01', (bmcs[0].addr, bmcs[0].port))
    poke.close()
    # pyghmi's loop swallows SIGTERM otherwise
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    print('serving %d BMCs from %s' % (len(bmcs), first), flush=True)
    bmcs[0].listen()


if __name__ == '__main__':
    main()
