"""moto's S3-protocol server on 127.0.0.1, for the tests (``tests/offload_stores.py`` starts
it in a child process, so the test process talks to it over HTTP only, as to any S3).

It prints the port it listens on, then serves until its standard input is closed: when
the test run ends, or dies, the server goes with it.
"""

from __future__ import annotations

import logging
import sys

from moto.server import ThreadedMotoServer


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    print(server.get_host_and_port()[1], flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
