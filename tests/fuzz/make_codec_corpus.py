#!/usr/bin/env python3
"""Writes the seed corpus of the codec fuzz target (tests/fuzz/corpus/codec/).

Each file: byte 0 = payload frame count that followed on the wire, then one header frame
(docs/protocol.md). Written independently of runtime/net/Codec.cpp, from the protocol
document, so the seeds also cross-check the C++ encoder. Usage:
    python3 tests/fuzz/make_codec_corpus.py [out_dir]
"""
import os
import struct
import sys

MAGIC, VERSION = 0x4D524654, 6
HELLO, WELCOME, REQUEST, TASK, RESULT, NODE_JOINED, HEARTBEAT, SHUTDOWN, BYE, PROBE, PROBE_ACK, MEASURE, POLICY, RECEIVED = range(1, 15)
BLAME, BLAME_REPLY = 19, 20


def s(text):
    b = text.encode()
    return struct.pack("<H", len(b)) + b


def frame(kind, body, payloads=None, *, magic=MAGIC, version=VERSION, reserved=0, body_length=None):
    if payloads is None:
        payloads = 1 if kind in (TASK, PROBE) else 0
    length = len(body) if body_length is None else body_length
    return struct.pack("<IHHIHH", magic, version, kind, length, payloads, reserved) + body


def app(name, kernel=0, n=512, nbytes=2 * 512 * 512 * 8, flops=2 * 512.0**3, weight=1.0, tasks=1000, cores=1, mem=0):
    return s(name) + struct.pack("<BIQddQIQ", kernel, n, nbytes, flops, weight, tasks, cores, mem)


def welcome(apps, buffer=10, policy="fcfs", one_port=1, count=None, calibrate_reps=0, probe_bytes=0, seed=1, features=1):
    count = len(apps) if count is None else count
    return (struct.pack("<I", buffer) + s(policy) + struct.pack("<BI", one_port, count) + b"".join(apps)
            + struct.pack("<IQQII", calibrate_reps, probe_bytes, seed, 0, features))


def result(task_id=(2 << 40) | 17, node="w1", compute=0.25, queued=0.01, checksum=1234.5, failed=0, error=""):
    return struct.pack("<Q", task_id) + s(node) + struct.pack("<dddB", compute, queued, checksum, failed) + s(error)


def hello(name="worker-1", cores=8, memory=16 << 30, features=1):
    return s(name) + struct.pack("<IQI", cores, memory, features)


NAN, INF = float("nan"), float("inf")
SEEDS = {
    # valid messages of every kind: (payload frames on the wire, header frame)
    "valid-hello": (0, frame(HELLO, hello())),
    "valid-hello-name-at-limit": (0, frame(HELLO, hello("n" * 128))),
    "valid-welcome-1app": (0, frame(WELCOME, welcome([app("mm")]))),
    "valid-welcome-3apps": (0, frame(WELCOME, welcome(
        [app("mm"), app("add", kernel=1, flops=512.0**2, weight=2.5), app("big", kernel=3, tasks=1 << 40, cores=4)],
        buffer=1 << 20, policy="cgbc", one_port=0))),
    "valid-welcome-calibration": (0, frame(WELCOME, welcome([app("mm")], calibrate_reps=10000, probe_bytes=1 << 20, seed=42))),
    "valid-request": (0, frame(REQUEST, struct.pack("<I", 7))),
    "valid-task": (1, frame(TASK, struct.pack("<Q", (1 << 40) | 99))),
    "valid-result": (0, frame(RESULT, result())),
    "valid-result-failed": (0, frame(RESULT, result(failed=1, checksum=NAN, error="dgemm: out of memory"))),
    "valid-node-joined": (0, frame(NODE_JOINED, s("w2") + s("w1") + struct.pack("<IQ", 4, 8 << 30))),
    "valid-heartbeat": (0, frame(HEARTBEAT, b"")),
    "valid-shutdown": (0, frame(SHUTDOWN, s("all tasks done"))),
    "valid-bye": (0, frame(BYE, b"")),
    "valid-probe": (1, frame(PROBE, struct.pack("<I", 3))),
    "valid-probe-ack": (0, frame(PROBE_ACK, struct.pack("<I", 3))),
    "valid-measure-task": (0, frame(MEASURE, s("w1") + s("mm") + struct.pack("<Bd", 0, 0.125))),
    "valid-measure-link": (0, frame(MEASURE, s("w2") + s("") + struct.pack("<Bd", 1, 1.1e9))),
    "valid-measure-output": (0, frame(MEASURE, s("w1") + s("gz") + struct.pack("<Bd", 7, 70123.0))),
    "valid-received": (0, frame(RECEIVED, struct.pack("<IQQ", 2, 7, 1 << 41))),
    "valid-blame": (0, frame(BLAME, struct.pack("<Q", (1 << 40) | 5) + s("w7") + struct.pack("<d", 2.5))),
    "valid-blame-reply": (0, frame(BLAME_REPLY, struct.pack("<Q", (1 << 40) | 5) + s("w7"))),
    "valid-blame-reply-unknown": (0, frame(BLAME_REPLY, struct.pack("<Q", 5) + s(""))),
    "bad-blame-negative-wait": (0, frame(BLAME, struct.pack("<Q", 5) + s("w7") + struct.pack("<d", -1.0))),
    # edge cases that must be rejected
    "bad-empty-frame": (0, b""),
    "bad-truncated-header": (0, frame(HELLO, hello())[:11]),
    "bad-magic": (0, frame(HELLO, hello(), magic=0x12345678)),
    "bad-version": (0, frame(HELLO, hello(), version=1)),
    "bad-kind-0": (0, frame(0, b"")),
    "bad-kind-999": (0, frame(999, b"")),
    "bad-kind-15": (0, frame(15, b"")),
    "bad-received-empty": (0, frame(RECEIVED, struct.pack("<I", 0))),
    "bad-received-count-beyond-body": (0, frame(RECEIVED, struct.pack("<IQ", 3, 7))),
    "bad-policy-empty": (0, frame(13, b"")),
    "bad-reserved": (0, frame(HEARTBEAT, b"", reserved=1)),
    "bad-body-length-mismatch": (0, frame(REQUEST, struct.pack("<I", 7), body_length=5)),
    "bad-body-length-huge": (0, frame(REQUEST, struct.pack("<I", 7), body_length=0xFFFFFFFF)),
    "bad-trailing-byte": (0, frame(BYE, b"\0")),
    "bad-task-without-payload": (0, frame(TASK, struct.pack("<Q", 1))),
    "bad-hello-with-payload": (1, frame(HELLO, hello(), payloads=1)),
    "bad-hello-name-over-limit": (0, frame(HELLO, hello("n" * 129))),
    "bad-hello-empty-name": (0, frame(HELLO, hello(""))),
    "bad-welcome-0apps": (0, frame(WELCOME, welcome([]))),
    "bad-welcome-absurd-count": (0, frame(WELCOME, welcome([app("mm")], count=0xFFFFFFFF))),
    "bad-welcome-count-beyond-body": (0, frame(WELCOME, welcome([app("mm")], count=2))),
    "bad-welcome-nan-flops": (0, frame(WELCOME, welcome([app("mm", flops=NAN)]))),
    "bad-request-0": (0, frame(REQUEST, struct.pack("<I", 0))),
    "bad-result-inf-seconds": (0, frame(RESULT, result(compute=INF))),
    "bad-probe-without-payload": (0, frame(PROBE, struct.pack("<I", 3))),
    "bad-welcome-calibrate-reps": (0, frame(WELCOME, welcome([app("mm")], calibrate_reps=10001))),
    "bad-measure-what": (0, frame(MEASURE, s("w1") + s("mm") + struct.pack("<Bd", 8, 1.0))),
    "bad-measure-negative": (0, frame(MEASURE, s("w1") + s("mm") + struct.pack("<Bd", 0, -1.0))),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "codec")
    os.makedirs(out, exist_ok=True)
    for name, (payloads, data) in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes([payloads]) + data)
    print(f"wrote {len(SEEDS)} seeds to {out}")


if __name__ == "__main__":
    main()
