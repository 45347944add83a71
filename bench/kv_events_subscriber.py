"""A KV-cache event subscriber for bench/kv_events_cpu.sh: `read` drains and counts batches
(reporting sequence gaps), `stuck` connects, subscribes and never reads (a tiny receive queue
and socket buffer), like a router that hung. Runs until SIGTERM; prints one JSON line then."""

import json
import signal
import sys

import zmq

mode, endpoint = sys.argv[1], sys.argv[2]
context = zmq.Context()
sub = context.socket(zmq.SUB)
if mode == "stuck":
    sub.setsockopt(zmq.RCVHWM, 1)
    sub.setsockopt(zmq.RCVBUF, 4096)
sub.connect(endpoint)
sub.setsockopt(zmq.SUBSCRIBE, b"")
stopping = False


def stop(*_):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)
num_batches, num_gaps, last_seq = 0, 0, None
while not stopping:
    if mode == "stuck":
        signal.pause()
        continue
    if sub.poll(200):
        _, seq_bytes, _ = sub.recv_multipart()
        seq = int.from_bytes(seq_bytes, "big")
        if last_seq is not None and seq != last_seq + 1:
            num_gaps += 1
        last_seq, num_batches = seq, num_batches + 1
print(json.dumps({"mode": mode, "num_batches": num_batches, "num_gaps": num_gaps}), flush=True)
