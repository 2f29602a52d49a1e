#!/usr/bin/env python3
"""A stand-in for the one call Juno's Ironic conductor makes that cannot be answered here: Keystone's
v2.0 token call. Before its takeover fetches images from Glance (a real one in the tests,
scripts/glance.sh), Juno's conductor asks Keystone v2.0 for an admin token to hand to Glance, even
with `noauth`; the real Keystone of the tests (30.0.0) serves v3 only, and Juno's v3 path sends no
domain, which Keystone 30 refuses. Loopback only, python3 standard library (docs/juno.md).

Usage: fakekeystone2.py PORT

  POST /v2.0/tokens        an admin token (any credentials: there is nothing behind it)
Every request is printed to stdout (`POST /v2.0/tokens`, `GET /...`), so a test sees what was asked;
anything else is answered 404.
"""
import http.server
import json
import sys
import threading

# one line at a time: print() writes the text and the newline apart, and the server's threads
# interleave them
_OUT = threading.Lock()


def say(line):
    with _OUT:
        sys.stdout.write(line + '\n')
        sys.stdout.flush()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, headers, body):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def not_found(self):
        say('%s %s' % (self.command, self.path.split('?')[0]))
        self.answer(404, {'Content-Type': 'text/plain'}, b'404 Not Found\n')

    do_HEAD = not_found
    do_GET = not_found

    def do_POST(self):
        length = int(self.headers.get('Content-Length') or 0)
        self.rfile.read(length)
        say('POST %s' % self.path)
        if self.path.rstrip('/') != '/v2.0/tokens':
            return self.answer(404, {'Content-Type': 'text/plain'}, b'404 Not Found\n')
        body = {'access': {
            'token': {'id': 'fake-admin-token', 'expires': '2099-01-01T00:00:00Z',
                      'tenant': {'id': 'admin', 'name': 'admin'}},
            'user': {'id': 'admin', 'name': 'admin', 'roles': [{'name': 'admin'}]},
            'serviceCatalog': [],
            'metadata': {'is_admin': 1, 'roles': []},
        }}
        self.answer(200, {'Content-Type': 'application/json'}, json.dumps(body).encode())


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


if __name__ == '__main__':
    srv = Server(('127.0.0.1', int(sys.argv[1])), Handler)
    say('listening on 127.0.0.1:%d' % srv.server_address[1])
    srv.serve_forever()
