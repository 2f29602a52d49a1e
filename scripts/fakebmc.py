#!/usr/bin/env python3
"""Fake IPMI BMC on loopback only (PyPI pyghmi), for the takeover tests. Usage: fakebmc.py PORT [USER PASS [ADDR [on|off]]]
(ADDR: a loopback address, 127.0.0.1 by default; tests that need port 623 each take their own 127.0.0.x;
the last argument: the machine's power state at start, off by default)
Run with the Ironic test venv (scripts/ironic.sh installs pyghmi there). Prints "power on" / "power off"
when Ironic changes the power state, so a test can prove a stopped machine was not powered on.
"""
import os
import signal
import sys

import pyghmi.ipmi.bmc as bmc

# pyghmi's loop swallows SIGTERM otherwise; exit at once on TERM/INT
signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
signal.signal(signal.SIGINT, lambda *a: os._exit(0))


class LoopbackBmc(bmc.Bmc):
    def __init__(self, authdata, port, addr='127.0.0.1', power='off'):
        if not addr.startswith('127.'):
            raise SystemExit('fakebmc.py: loopback addresses only (127.x.x.x), not ' + addr)
        # '::ffff:127.0.0.1' = IPv4 loopback on pyghmi's dual-stack UDP socket
        super().__init__(authdata, port, address='::ffff:' + addr)
        self.powerstate = power
        self.bootdevice = 'default'

    def get_boot_device(self):
        return self.bootdevice

    def set_boot_device(self, bootdevice):
        self.bootdevice = bootdevice

    def cold_reset(self):
        pass

    def get_power_state(self):
        return self.powerstate

    def power_off(self):
        self.powerstate = 'off'
        print('power off', flush=True)

    def power_on(self):
        self.powerstate = 'on'
        print('power on', flush=True)

    def power_reset(self):
        pass

    def power_shutdown(self):
        self.powerstate = 'off'

    def is_active(self):
        return self.powerstate == 'on'


port = int(sys.argv[1]) if len(sys.argv) > 1 else 6230
user = sys.argv[2] if len(sys.argv) > 2 else 'admin'
pw = sys.argv[3] if len(sys.argv) > 3 else 'password'
addr = sys.argv[4] if len(sys.argv) > 4 else '127.0.0.1'
power = sys.argv[5] if len(sys.argv) > 5 else 'off'
if power not in ('on', 'off'):
    raise SystemExit('fakebmc.py: the power state is on or off, not ' + power)
LoopbackBmc({user: pw}, port, addr, power).listen()
