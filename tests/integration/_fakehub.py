"""A loopback stand-in for the Hugging Face hub's HTTP API (model info, file tree, resolve),
serving a local folder as one repo at one commit; it refuses requests without the token.
huggingface_hub talks to it through ``HF_ENDPOINT``, so the kit's real download code runs."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SHA = "0123456789abcdef0123456789abcdef01234567"


class FakeHub:
    def __init__(self, repo_id: str, folder: Path, token: str, size_boost: int = 0) -> None:
        self.repo_id = repo_id
        self.files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
        self.token = token
        self.size_boost = size_boost
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                hub.requests.append(f"{self.command} {self.path}")

            def _send(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None,
                      head: bool = False) -> None:
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def _authorized(self) -> bool:
                return self.headers.get("authorization") == f"Bearer {hub.token}"

            def _resolve(self, head: bool) -> None:
                prefix = f"/{hub.repo_id}/resolve/"
                path = self.path.split("?")[0]
                if not path.startswith(prefix):
                    self._send(404, head=head)
                    return
                name = path[len(prefix):].split("/", 1)[1]
                data = hub.files.get(name)
                if data is None:
                    self._send(404, headers={"X-Error-Code": "EntryNotFound"}, head=head)
                    return
                self._send(200, data, {"X-Repo-Commit": SHA,
                                       "ETag": f'"{hashlib.sha1(data).hexdigest()}"'}, head)

            def do_HEAD(self) -> None:
                if not self._authorized():
                    self._send(401, head=True)
                    return
                self._resolve(True)

            def do_GET(self) -> None:
                if not self._authorized():
                    self._send(401, b'{"error": "Invalid credentials"}')
                    return
                api = f"/api/models/{hub.repo_id}"
                if self.path.startswith(api + "/tree/"):
                    body = [{"type": "file", "path": k, "size": len(v) + hub.size_boost,
                             "oid": hashlib.sha1(v).hexdigest()} for k, v in hub.files.items()]
                    self._send(200, json.dumps(body).encode(),
                               {"Content-Type": "application/json"})
                elif self.path.startswith(api + "/revision/") or self.path.startswith(api + "?"):
                    body2 = {"id": hub.repo_id, "modelId": hub.repo_id, "sha": SHA,
                             "siblings": [{"rfilename": k, "size": len(v) + hub.size_boost}
                                          for k, v in hub.files.items()]}
                    self._send(200, json.dumps(body2).encode(),
                               {"Content-Type": "application/json"})
                elif self.path.startswith("/api/"):
                    self._send(404)
                else:
                    self._resolve(False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
