"""`make bench` section "redaction": how well and how fast what agents write is checked for
secrets (rooms.secrets), in process, on no server.

- Precision and recall over the corpus of tests/rooms/redaction_corpus.py: the benign
  texts (each also as a write_context payload) and structured payloads, which must come
  back unchanged, and the credentials in their real formats, which must be redacted.
  Recall under 95 % or any benign string altered is a correctness failure.
- Throughput (bytes a second) of `secrets_redacted` on worst-case inputs of the maximum
  entry size (a context payload's 64,000 characters of JSON, rooms.schemas): texts where
  every gate fires all the way through (keys with values, URLs, headers, PEM headers,
  token prefixes, runs without an end), each the median of a few runs; the slowest is the
  figure (CPU time: the scan is all CPU, and the machine may be shared). A clean note of the
  same size is timed for comparison.

It runs in a child process with the project's settings, so that the deployment's static
keys (settings.API_KEYS, set to the corpus's) are looked for as they are in the service,
and Django is never configured in the bench's own process.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

RUNS = 5
RECALL_FLOOR = 0.95
ROOT = Path(__file__).resolve().parent.parent

# Units repeated to the maximum entry size; each makes one detector work on every repeat.
WORST_UNITS = {
    "keys with quoted values": 'api_key="',
    "keys with secret values": "password=aB3dEf7hIj9kLm ",
    "every gate": "password=aB3$ ghp_AKIAeyJ sk-ant-://u:p@ bearer Basic xoxb-AC",
    "URL userinfo": "://u:",
    "Authorization: Token": "Authorization: Token ",
    "bearer tokens": "Bearer " + "a1" * 40 + " ",
    "Basic headers": "Basic dXNlcjpwYXNz ",
    "XML password elements": "<password>",
    "PEM headers without keys": "-----BEGIN RSA PRIVATE KEY-----\n",
    "PEM END lines": "END PRIVATE KEY",
    "one token run": "a",
    "JWT starts": "eyJ",
}
CLEAN_UNIT = (
    "We agreed to migrate the billing service on Monday; Alice owns the schema change and "
    "the key risk is the retry storm we saw last week (see 3f786850e387550fdab836ed7e6dc881"
    "de23001b). "
)


class FailureSink(Protocol):
    def add(self, check: str, detail: str = "", n: int = 1) -> None: ...


@dataclass
class RedactionFigures:
    benign: int = 0
    benign_altered: list[str] = field(default_factory=list)
    credentials: int = 0
    missed: list[str] = field(default_factory=list)
    entry_bytes: int = 0
    worst_bytes_per_s: dict[str, float] = field(default_factory=dict)
    clean_bytes_per_s: float = 0.0

    @property
    def caught(self) -> int:
        return self.credentials - len(self.missed)

    @property
    def precision(self) -> float:
        flagged = self.caught + len(self.benign_altered)
        return self.caught / flagged if flagged else 1.0

    @property
    def recall(self) -> float:
        return self.caught / self.credentials if self.credentials else 1.0


def measure(fails: FailureSink) -> RedactionFigures:
    """The figures, from a child process (module docstring); failures added to `fails`."""
    from tests.rooms import redaction_corpus as corpus

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "API_KEYS": corpus.STATIC_API_KEYS,
    }
    done = subprocess.run(
        [sys.executable, "-m", "bench.redaction"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench.redaction failed: {done.stderr[-2000:]}")
    fig = RedactionFigures(**json.loads(done.stdout))
    if fig.benign_altered:
        fails.add("redaction: benign text altered", "; ".join(fig.benign_altered[:3]))
    if fig.recall < RECALL_FLOOR:
        fails.add("redaction: recall under 95 %", ", ".join(fig.missed))
    return fig


def _measure_here() -> RedactionFigures:
    import django

    django.setup()
    from rooms.schemas import MAX_PAYLOAD_JSON
    from rooms.secrets import secrets_redacted
    from tests.rooms import redaction_corpus as corpus

    fig = RedactionFigures(entry_bytes=MAX_PAYLOAD_JSON)
    benign: list[tuple[str, Any]] = [(text, text) for text in corpus.BENIGN_TEXTS]
    benign += [(text, corpus.benign_payload_of(text)) for text in corpus.BENIGN_TEXTS]
    benign += [(corpus.dumps(p)[:60], p) for p in corpus.BENIGN_PAYLOADS]
    fig.benign = len(benign)
    fig.benign_altered = [name for name, value in benign if secrets_redacted(value)[1]]
    credentials: list[tuple[str, Any, str]] = [
        (c.name, c.text, c.secret) for c in corpus.CREDENTIALS
    ] + corpus.CREDENTIAL_PAYLOADS
    fig.credentials = len(credentials)
    fig.missed = [
        name
        for name, value, secret in credentials
        if secret in corpus.dumps(secrets_redacted(value)[0])
    ]
    for name, unit in WORST_UNITS.items():
        fig.worst_bytes_per_s[name] = _bytes_per_s(_filled(unit, MAX_PAYLOAD_JSON))
    fig.clean_bytes_per_s = _bytes_per_s(_filled(CLEAN_UNIT, MAX_PAYLOAD_JSON))
    return fig


def _filled(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _bytes_per_s(text: str) -> float:
    from rooms.secrets import secrets_redacted

    payload = {"text": text}
    seconds = []
    for _ in range(RUNS):
        # CPU time, not wall time: the machine is shared, and the scan is all CPU.
        began = time.process_time()
        secrets_redacted(payload, "payload")
        seconds.append(time.process_time() - began)
    return len(text.encode()) / statistics.median(seconds)


def section(fig: RedactionFigures) -> list[str]:
    slowest = min(fig.worst_bytes_per_s, key=fig.worst_bytes_per_s.__getitem__, default="")
    worst = fig.worst_bytes_per_s.get(slowest, 0.0)
    lines = [
        "Redaction (section redaction): rooms.secrets over tests/rooms/redaction_corpus.py",
        f"    benign strings {fig.benign}, altered {len(fig.benign_altered)}; credentials "
        f"{fig.credentials}, redacted {fig.caught}",
        f"    precision {100 * fig.precision:.1f} %   recall {100 * fig.recall:.1f} %",
        f"    throughput on {fig.entry_bytes:,}-byte entries (CPU time, median of {RUNS}): "
        f"worst case {worst / 1e6:.2f} MB/s ({slowest}), clean note "
        f"{fig.clean_bytes_per_s / 1e6:.2f} MB/s",
    ]
    for name, rate in sorted(fig.worst_bytes_per_s.items(), key=lambda kv: kv[1]):
        lines.append(f"      {name:28s} {rate / 1e6:6.2f} MB/s")
    if fig.missed:
        lines.append(f"    missed: {', '.join(fig.missed)}")
    if fig.benign_altered:
        lines.append(f"    altered: {'; '.join(fig.benign_altered[:5])}")
    lines.append("")
    return lines


if __name__ == "__main__":
    print(json.dumps(asdict(_measure_here())))
