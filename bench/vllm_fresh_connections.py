"""`vllm bench serve` with a new connection for every request; run with vLLM's own python:

    <vllm venv>/bin/python bench/vllm_fresh_connections.py [vllm bench serve flags...]

vLLM's client keeps idle connections for 60 s and reuses them, and does not retry a request whose
connection the server has closed. llama.cpp's llama-server closes kept-alive connections (after 5 s
idle, and at times between two requests of a busy closed loop: docs/bench.md, "Keep-alive
connections"), so against it such requests fail with "Server disconnected" before any byte of
response. bench/cpu_vs_llamacpp.sh runs vLLM's client through this file, for both servers alike:
every request opens its own connection (aiohttp's force_close), which costs a local TCP
handshake, well under a millisecond, and nothing else changes.
"""
import sys

import aiohttp


class FreshConnections(aiohttp.TCPConnector):
    def __init__(self, *args, **kwargs):
        kwargs.pop("keepalive_timeout", None)  # aiohttp refuses it together with force_close
        kwargs["force_close"] = True
        super().__init__(*args, **kwargs)


aiohttp.TCPConnector = FreshConnections

if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main

    sys.argv = ["vllm", "bench", "serve"] + sys.argv[1:]
    sys.exit(main())
