"""The machine lines every benchmark prints first: these machines are shared and noisy, so a figure
is only read together with the CPU it ran on and the load average around it."""

from __future__ import annotations

import os
import platform


def cpu_model() -> str:
    """/proc/cpuinfo's model name (platform.processor() elsewhere)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def loadavg() -> str:
    """The 1-, 5- and 15-minute load averages, e.g. `1.49,3.30,3.96`."""
    return ",".join(f"{x:.2f}" for x in os.getloadavg())


def machine_line(memory: bool = False, extra: str = "") -> str:
    """`machine: nproc=2 cpu='AMD EPYC' [mem=24 GiB] python=3.11.7 [extra] loadavg(before)=…`."""
    mem = f" mem={os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB" if memory else ""
    return (f"machine: nproc={os.cpu_count()} cpu={cpu_model()!r}{mem} python={platform.python_version()}"
            f"{' ' + extra if extra else ''} loadavg(before)={loadavg()}")
