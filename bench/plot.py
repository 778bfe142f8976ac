"""latest.png: the Targets (each figure against its limit, so that <= 1
means met) beside the figures worth seeing at a glance: the direct line
against a bare write (1-2), against its peers (12), threads (6) and
memory (7). Drawn after a whole run only, which has them all.
"""

from __future__ import annotations

import statistics

from report import fmt_num
from sections.s06_threads import THREADS
from sections.s12_peers import PEERS


def plot(m: dict, fig: dict, targets: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Left: the targets (a long list), over two rows; right: direct line
    # against bare write, then against the peers; below, threads, memory.
    f = plt.figure(figsize=(14, 14))
    grid = f.add_gridspec(3, 2)
    ax = [
        [f.add_subplot(grid[0:2, 0]), f.add_subplot(grid[0, 1])],
        [f.add_subplot(grid[2, 0]), f.add_subplot(grid[2, 1])],
    ]
    peers_ax = f.add_subplot(grid[1, 1])
    # Each figure against its limit, so that <= 1 means met.
    names = [t["name"] for t in targets if t["limit"]]
    share = [
        max(0.02, t["value"] / t["limit"] if t["op"] == "<=" else t["limit"] / max(t["value"], 1e-9))
        for t in targets
        if t["limit"]
    ]
    a = ax[0][0]
    a.barh(names, share, color=["tab:green" if s <= 1 else "tab:red" for s in share])
    for y, t in enumerate(t for t in targets if t["limit"]):
        a.annotate(fmt_num(t["value"], t["unit"]), (share[y], y), xytext=(3, 0), textcoords="offset points",
                   va="center", fontsize=7)
    a.axvline(1, color="black", lw=1)
    a.set_xscale("log")
    a.set_xlim(0.015, max(share) * 3)
    a.invert_yaxis()
    a.set_xlabel("measured / target, log scale (<= 1 is met)")
    a.set_title("Targets")
    a.tick_params(axis="y", labelsize=7)

    a = ax[0][1]
    labels: list[str] = []
    bars: dict[str, list[float]] = {"bare": [], "format_write": [], "direct": []}
    for fd2, r in fig["direct"].items():
        for size, v in r["ns_per_line"].items():
            labels.append(f"{fd2}\n{size} B")
            for k in bars:
                bars[k].append(statistics.median(v[k]))
    x = range(len(labels))
    legend = {"bare": "bare write(2)", "format_write": "format + write(2)", "direct": "pylogsink direct"}
    for j, (k, v) in enumerate(bars.items()):
        a.bar([i + (j - 1) * 0.27 for i in x], v, 0.27, label=legend[k])
    a.set_xticks(list(x), labels, fontsize=8)
    a.set_ylabel("ns per line")
    a.set_title("Direct line vs bare write(2)")
    a.legend()

    a = peers_ax
    labels, bars = [], {k: [] for k in PEERS}
    for fd2, r in fig["peers"].items():
        for size, v in r["ns_per_line"].items():
            labels.append(f"{fd2}\n{size} B")
            for k in bars:
                bars[k].append(statistics.median(v[k]))
    x = range(len(labels))
    legend = {
        "bare": "bare write(2)",
        "pylogsink": "pylogsink log::error!",
        "env_logger": "env_logger",
        "fmt": "tracing fmt",
    }
    for j, (k, v) in enumerate(bars.items()):
        a.bar([i + (j - 1.5) * 0.2 for i in x], v, 0.2, label=legend[k])
    a.set_xticks(list(x), labels, fontsize=8)
    a.set_ylabel("ns per line")
    a.set_title("log::error! line: pylogsink against its peers")
    a.legend(fontsize=8)

    a = ax[1][0]
    threads = list(THREADS)
    for sink in ("pylogsink", "fd2"):
        a.plot(threads, [fig["threads"][f"{sink} {t}"]["lines_per_s"] for t in threads], "o-", label=sink)
    a.set_xscale("log", base=2)
    a.set_xticks(threads, [str(t) for t in threads])
    a.set_xlabel("threads")
    a.set_ylabel("lines per second (pipe)")
    a.set_ylim(bottom=0)
    a.set_title("Threads into a drained pipe")
    a.legend()

    a = ax[1][1]
    rss = fig["memory"]["rss_kib"]
    a.plot([c for c, _ in rss], [r / 1024 for _, r in rss], "o-")
    a.set_ylim(bottom=0)
    a.set_xlabel("calls")
    a.set_ylabel("RSS (MiB)")
    a.set_title("Memory over calls that keep lines")

    f.suptitle(f"pylogsink benchmark, {m['date']}: {m['cpu']}, {m['cores']} cores, Linux {m['kernel']}")
    f.tight_layout(rect=(0.01, 0, 1, 0.98))
    f.savefig(path, dpi=90)
