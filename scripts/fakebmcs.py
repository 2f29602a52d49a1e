#!/usr/bin/env python3
"""Many fake IPMI BMCs in one process (PyPI pyghmi; machines that are a power state only, as in fakebmc.py without --vm),
for the API benchmark at 1,000 nodes: one BMC per node, as a real cloud has, without a process each.
Each is fakebmc.py's LoopbackBmc (imported from beside this script).

Usage: fakebmcs.py FIRST COUNT [USER PASS]     e.g. fakebmcs.py 127.0.1.1 250 admin benchpw
Serves COUNT loopback addresses from FIRST upwards (127.a.b.c, c runs 1..254 then b goes up) on port
623, every machine powered off at start. pyghmi's Bmc.listen() serves every Bmc of the process from one
loop; its sessions are select()ed, so keep COUNT well under 1,000 per process (file descriptors).
Prints "power on" / "power off" with the address when Ironic changes a power state.
Run with the Ironic test venv (scripts/ironic.sh installs pyghmi there).
"""
import ipaddress
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


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    first, count = sys.argv[1], int(sys.argv[2])
    user = sys.argv[3] if len(sys.argv) > 3 else 'admin'
    password = sys.argv[4] if len(sys.argv) > 4 else 'password'
    bmcs = [LoopbackBmc({user: password}, 623, a, 'off', name=a) for a in addresses(first, count)]
    # pyghmi's I/O thread started select()ing on the first BMC's socket alone, and its own wake-up
    # goes to [::1]:623, where nothing of ours listens: until a packet reaches the first BMC the
    # others are deaf (a client of the second BMC timed out). A packet to the first wakes it, and it
    # select()s on every socket from then on.
    poke = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    poke.sendto(b'\x01', (bmcs[0].addr, 623))
    poke.close()
    print('serving %d BMCs from %s' % (len(bmcs), first), flush=True)
    bmcs[0].listen()


if __name__ == '__main__':
    main()
