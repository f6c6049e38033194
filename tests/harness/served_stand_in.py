"""A stand-in server (an ``httpx2.MockTransport``) served on a loopback port, so that an engine's own process
reaches it as it reaches a real server."""

import contextlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2


@contextlib.contextmanager
def served(transport: httpx2.MockTransport):
    """Serve ``transport`` on a free loopback port; yields the base URL (``http://127.0.0.1:<port>/v1``)."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            request = httpx2.Request(
                self.command, f"http://{self.headers['host']}{self.path}", headers=dict(self.headers), content=body
            )
            response = transport.handle_request(request)
            response.read()
            self.send_response(response.status_code)
            self.send_header("content-type", response.headers.get("content-type", "application/json"))
            self.send_header("content-length", str(len(response.content)))
            self.end_headers()
            self.wfile.write(response.content)

        do_GET = do_POST = _answer

        def log_message(self, *args):  # no access log on stderr
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
