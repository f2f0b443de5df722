#!/usr/bin/env python3
"""Summarises a JFR recording of the service under load for service-alloc.sh.

Args: requests top threads.json alloc.json cpu.json (from `jfr print --json`).
Prints bytes allocated per request (jdk.ThreadAllocationStatistics: per thread, last minus first
value, summed; threads seen once count from 0), then the allocation sites by sampled weight
(jdk.ObjectAllocationSample, grouped by object class and the first frames below the allocation)
and the CPU samples by top frame (jdk.ExecutionSample).
"""
import json
import sys
from collections import defaultdict


def events(path):
    with open(path) as f:
        return json.load(f)["recording"]["events"]


def frame(f):
    m = f["method"]
    return "%s.%s:%s" % (m["type"]["name"], m["name"], f.get("lineNumber", "?"))


IDEM_TYPES = ("dev/idem/", "dev.idem.")


def frames(e, n):
    st = e["values"].get("stackTrace") or {}
    return [frame(f) for f in (st.get("frames") or [])[:n]]


def main():
    requests, top = int(sys.argv[1]), int(sys.argv[2])
    per_thread = defaultdict(list)
    for e in events(sys.argv[3]):
        v = e["values"]
        per_thread[v["thread"]["javaThreadId"] if v.get("thread") else v["javaThreadId"]].append(
            (e["values"]["startTime"], v["allocated"]))
    total = 0
    for samples in per_thread.values():
        samples.sort()
        first = samples[0][1] if len(samples) > 1 else 0
        total += samples[-1][1] - first
    print("bytes allocated: %d over %d requests = %.0f bytes/request" % (
        total, requests, total / max(1, requests)))

    sites = defaultdict(int)
    weight = 0
    for e in events(sys.argv[4]):
        v = e["values"]
        w = v["weight"]
        weight += w
        cls = v["objectClass"]["name"].rsplit(".", 1)[-1]
        sites[cls + " <- " + " <- ".join(frames(e, 4))] += w
    print("\nallocation sites (share of sampled weight; bytes/request scaled to the total above):")
    for site, w in sorted(sites.items(), key=lambda x: -x[1])[:top]:
        print("  %5.1f%% %7.0f B/req  %s" % (100.0 * w / weight, total / max(1, requests) * w / weight, site))

    # The same samples by the first of Idem's own frames on the stack (what Idem code led to the
    # allocation, whoever made the object); "outside Idem" is Jetty, the JDK and JFR by themselves.
    idem = defaultdict(lambda: [0, 0])
    for e in events(sys.argv[4]):
        own = [f for f in frames(e, 24) if f.startswith(IDEM_TYPES)]
        site = own[0] if own else "(outside Idem)"
        idem[site][0] += e["values"]["weight"]
        idem[site][1] += 1
    print("\nallocation by the first Idem frame (share of weight, samples):")
    for site, (w, c) in sorted(idem.items(), key=lambda x: -x[1][0])[:top]:
        print("  %5.1f%% %6d  %s" % (100.0 * w / weight, c, site))

    cpu = defaultdict(int)
    n = 0
    for e in events(sys.argv[5]):
        f = frames(e, 1)
        if f:
            cpu[f[0]] += 1
            n += 1
    print("\nCPU samples by top frame (%d samples):" % n)
    for site, c in sorted(cpu.items(), key=lambda x: -x[1])[:top]:
        print("  %5.1f%%  %s" % (100.0 * c / max(1, n), site))


if __name__ == "__main__":
    main()
