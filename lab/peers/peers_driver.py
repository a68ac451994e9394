# Driver of `treefarm bench peers` (lab/peers/PeersBench.hpp), embedded in the treefarm
# binary and run with /usr/bin/python3 (Debian's interpreter, which sees python3-* packages).
# Usage: peers_driver.py PEER WORKERS NOOP_TASKS MATMUL_TASKS N WORKDIR
# Prints one JSON object: {"noop_tasks_per_s", "matmul_tasks_per_s", "noop_seconds",
# "matmul_seconds"} or {"skipped": true, "reason": "..."}.
import json
import os
import shutil
import subprocess
import sys
import time


def noop(i):
    return i


def matmul(a, b):
    return float((a @ b).sum())


def inputs(n, count=4):
    import numpy as np
    rng = np.random.default_rng(1)
    return [(rng.random((n, n)), rng.random((n, n))) for _ in range(count)]


def run_dask(workers, noop_tasks, matmul_tasks, n, workdir):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        return {"skipped": True, "reason": "Dask distributed is not installed: apt-get install python3-distributed"}
    pool = inputs(n)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      local_directory=workdir) as cluster, Client(cluster) as client:
        client.gather(client.map(noop, range(workers * 4), pure=False))  # warm-up
        t0 = time.perf_counter()
        client.gather(client.map(noop, range(noop_tasks), pure=False))
        noop_s = time.perf_counter() - t0
        client.submit(matmul, *pool[0], pure=False).result()  # warm-up
        t0 = time.perf_counter()
        futures = [client.submit(matmul, *pool[i % len(pool)], pure=False) for i in range(matmul_tasks)]
        client.gather(futures)
        matmul_s = time.perf_counter() - t0
    return {"noop_tasks_per_s": noop_tasks / noop_s, "matmul_tasks_per_s": matmul_tasks / matmul_s,
            "noop_seconds": noop_s, "matmul_seconds": matmul_s}


MM_SCRIPT = """import sys, numpy as np
d = np.load(sys.argv[1])
print(float((d['a'] @ d['b']).sum()))
"""


def run_workqueue(workers, noop_tasks, matmul_tasks, n, workdir):
    try:
        import work_queue as wq
    except ImportError:
        return {"skipped": True, "reason": "Work Queue's Python API is not installed: apt-get install python3-workqueue"}
    worker_bin = shutil.which("work_queue_worker")
    if worker_bin is None:
        return {"skipped": True, "reason": "work_queue_worker is not installed: apt-get install coop-computing-tools"}
    import numpy as np
    q = wq.WorkQueue(port=0)
    # Each worker's directory exists before it starts: a worker started first could find
    # none and exit at once, and the queue would wait for it forever (the second run of a
    # pair then hangs until its driver's timeout).
    for i in range(workers):
        os.makedirs(os.path.join(workdir, "w%d" % i), exist_ok=True)
    procs = [subprocess.Popen([worker_bin, "--cores", "1", "--timeout", "60", "--workdir",
                               os.path.join(workdir, "w%d" % i), "localhost", str(q.port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(workers)]
    try:
        def drain(count):
            done = 0
            while done < count:
                t = q.wait(5)
                if t is None and all(p.poll() is not None for p in procs):
                    raise RuntimeError("every work_queue_worker exited (codes %s) with %d tasks left"
                                       % ([p.returncode for p in procs], count - done))
                if t is not None:
                    if t.return_status != 0 or t.result != 0:
                        raise RuntimeError("work queue task failed: %r" % (t.output,))
                    done += 1

        def submit_noop(count):
            for _ in range(count):
                t = wq.Task("true")
                t.specify_cores(1)
                q.submit(t)

        submit_noop(workers * 2)  # warm-up: workers connected
        drain(workers * 2)
        t0 = time.perf_counter()
        submit_noop(noop_tasks)
        drain(noop_tasks)
        noop_s = time.perf_counter() - t0

        script = os.path.join(workdir, "mm.py")
        with open(script, "w") as f:
            f.write(MM_SCRIPT)
        files = []
        for i, (a, b) in enumerate(inputs(n)):
            path = os.path.join(workdir, "in%d.npz" % i)
            np.savez(path, a=a, b=b)
            files.append(path)
        t0 = time.perf_counter()
        for i in range(matmul_tasks):
            t = wq.Task("/usr/bin/python3 mm.py in.npz")
            t.specify_input_file(script, "mm.py", cache=True)
            # the inputs travel with every task, as treefarm's do
            t.specify_input_file(files[i % len(files)], "in.npz", cache=False)
            t.specify_cores(1)
            q.submit(t)
        drain(matmul_tasks)
        matmul_s = time.perf_counter() - t0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    return {"noop_tasks_per_s": noop_tasks / noop_s, "matmul_tasks_per_s": matmul_tasks / matmul_s,
            "noop_seconds": noop_s, "matmul_seconds": matmul_s}


def main():
    peer, workers, noop_tasks, matmul_tasks, n, workdir = sys.argv[1:7]
    args = (int(workers), int(noop_tasks), int(matmul_tasks), int(n), workdir)
    try:
        import numpy  # noqa: F401  (both peers' matmul inputs)
    except ImportError:
        result = {"skipped": True, "reason": "NumPy is not installed for /usr/bin/python3: apt-get install python3-numpy"}
        peer = None
    if peer is None:
        pass
    elif peer == "dask":
        result = run_dask(*args)
    elif peer == "workqueue":
        result = run_workqueue(*args)
    else:
        result = {"skipped": True, "reason": "unknown peer " + peer}
    sys.stdout.write("PEERS_RESULT " + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
