"""The top-level `service:` section (`brokerscope run`): /metrics, background analysis, alert ticks.

```yaml
service:                          # optional; these are the defaults
  metrics: true                   # serve /metrics
  metrics_listen: 127.0.0.1:9464  # loopback unless told otherwise; port 0 picks a free one
  max_destination_series: 50      # cap of destination / topic / stuck-message series per metric
  analysis: true                  # run the Spark jobs in the background
  analysis_interval: 30s          # … this often (a run that takes longer delays the next, never overlaps)
  alert_interval: null            # tick the alerts at least this often without scrapes (default: scrape_interval)
```
"""

from __future__ import annotations

from pydantic import Field, field_validator

from settings.base import Duration, Strict


def parse_listen(value: str) -> tuple[str, int]:
    """'127.0.0.1:9464', '9464' (loopback) or '[::1]:9464' → (host, port), with a clear error."""
    text = str(value).strip()
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{value!r} is not host:port; write e.g. 127.0.0.1:9464 (port 0 picks a free one)")
    return host, int(port)


class ServiceSettings(Strict):
    """Top-level `service:` section of the config (`brokerscope run`)."""

    metrics: bool = True
    metrics_listen: str = "127.0.0.1:9464"
    max_destination_series: int = Field(default=50, ge=1)
    analysis: bool = True
    analysis_interval: Duration = 30.0
    alert_interval: Duration | None = None

    @field_validator("metrics_listen")
    @classmethod
    def _listen(cls, v: str) -> str:
        parse_listen(v)
        return v
