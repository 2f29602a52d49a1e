#!/usr/bin/env python3
"""A stand-in for the two services Juno's Ironic conductor calls at a takeover and that cannot run
here: Glance's image API v1 (no Glance is installed for the tests) and Keystone's v2.0 token call
(the real Keystone of the tests, 30.0.0, serves v3 only, and Juno's conductor asks v2.0 for the
admin token it hands to Glance; its v3 path sends no domain, which Keystone 30 refuses).
Loopback only, python3 standard library, for tests/it/juno_takeover.rs and the docs (docs/juno.md).

Usage: fakeglance.py PORT CATALOG.json
CATALOG: {"<image id>": {"file": "/path", "properties": {"kernel_id": "...", ...}}, ...}

  POST /v2.0/tokens        an admin token (any credentials: there is nothing behind it)
  HEAD /v1/images/<id>     the image's metadata as Glance v1 headers (x-image-meta-*)
  GET  /v1/images/<id>     the file's bytes, with the same headers
Every request is printed to stdout (`GET /v1/images/<id>`), so a test sees what Juno asked for.
"""
import hashlib
import http.server
import json
import os
import sys
import threading

# one line at a time: print() writes the text and the newline apart, and the server's threads
# interleave them ("HEAD /a" + "GET /b" on one line, then an empty one)
_OUT = threading.Lock()


def say(line):
    with _OUT:
        sys.stdout.write(line + '\n')
        sys.stdout.flush()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, fmt, *args):
        pass

    def image(self):
        parts = self.path.split('?')[0].strip('/').split('/')
        if len(parts) != 3 or parts[:2] != ['v1', 'images']:
            return None, None
        return parts[2], CATALOG.get(parts[2])

    def meta_headers(self, image_id, img):
        data = open(img['file'], 'rb').read()
        h = {
            'x-image-meta-id': image_id,
            'x-image-meta-name': image_id,
            'x-image-meta-status': 'active',
            'x-image-meta-size': str(len(data)),
            'x-image-meta-checksum': hashlib.md5(data).hexdigest(),
            'x-image-meta-disk_format': img.get('disk_format', 'raw'),
            'x-image-meta-container_format': 'bare',
            'x-image-meta-is_public': 'True',
            'x-image-meta-deleted': 'False',
            'x-image-meta-protected': 'False',
            'x-image-meta-min_disk': '0',
            'x-image-meta-min_ram': '0',
            'x-image-meta-created_at': '2014-05-01T10:00:00',
            'x-image-meta-updated_at': '2014-05-01T10:00:00',
        }
        for k, v in img.get('properties', {}).items():
            h['x-image-meta-property-' + k] = str(v)
        return h, data

    def answer(self, status, headers, body):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def images(self):
        say('%s %s' % (self.command, self.path.split('?')[0]))
        image_id, img = self.image()
        if img is None:
            return self.answer(404, {'Content-Type': 'text/plain'}, b'404 Not Found\n')
        h, data = self.meta_headers(image_id, img)
        h['Content-Type'] = 'application/octet-stream'
        self.answer(200, h, data)

    do_HEAD = images

    def do_GET(self):
        self.images()

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
    port, catalog = int(sys.argv[1]), sys.argv[2]
    CATALOG = json.load(open(catalog))
    for i in CATALOG.values():
        if not os.path.isfile(i['file']):
            sys.exit('fakeglance.py: no file ' + i['file'])
    srv = Server(('127.0.0.1', port), Handler)
    say('listening on 127.0.0.1:%d' % port)
    srv.serve_forever()
