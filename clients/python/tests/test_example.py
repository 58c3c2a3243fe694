"""examples/python/orchestrator.py runs against the live service and shows what its docstring promises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from live_service import Clients

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "python" / "orchestrator.py"


def test_the_python_example_runs(clients: Clients) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "ARBITER_URL": clients.base_url,
        "ADMIN_KEY": clients.admin_key,
    }
    run = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=120)
    out = run.stdout
    assert run.returncode == 0, run.stderr + out
    assert "both orchestrators got the same: True" in out
    decided = re.findall(
        r"^(orch-[ab]): manifest (\S+) verdict=ARBITER_DECIDES directive=PROCEED "
        r"resolved_outcome=success action_owner=orch-a",
        out,
        re.M,
    )
    assert [who for who, _ in decided] == ["orch-a", "orch-b"] and decided[0][1] == decided[1][1]
    assert "orch-a: I am the action owner: running the follow-up for outcome success" in out
    assert "orch-b: proceeding without any side effect" in out
    assert "orch-b: I am the action owner" not in out
    assert re.search(r"verdict=RECONCILED directive=PROCEED", out)
    assert "vantage.enterprise.floor: status=resolved rule=source_priority answer={'amount': 60000" in out
    assert "kept, lost by source_priority: {'amount': 55000" in out
    assert out.endswith("example complete\n")
