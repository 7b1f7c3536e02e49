"""A PyTorch DataLoader with fork workers recorded with `strata record --sample` (Python stacks read
in the sampled thread): every worker process is sampled and its samples keep their Python stacks.
Each worker's multiprocessing resource-sharer thread (it sends the batches' file descriptors) blocks
every signal; its samples used to lose their Python stack (13-15% of a worker's samples, counted as
collector.sample_python_record). Debian's PyTorch (/usr/bin/python3); needs perf_event."""
import collections
import re
import subprocess

import pytest

from conftest import STRATA, SYSTEM_PYTHON, run_strata

torch_available = subprocess.run([SYSTEM_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not torch_available, reason="Debian's python3-torch not installed")

SCRIPT = r'''
import torch
from torch.utils.data import DataLoader, Dataset
torch.set_num_threads(2)
class Items(Dataset):
    def __len__(self):
        return 80 * 16
    def __getitem__(self, i):
        s = 0
        for k in range(2000):
            s += (k * i) % 7
        return torch.randn(3, 32, 32), s % 10
net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                          torch.nn.Linear(8 * 30 * 30, 10))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
steps = 0
for x, y in DataLoader(Items(), batch_size=16, num_workers=2):
    loss = torch.nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    steps += 1
print(steps)
'''


def test_dataloader_workers_keep_their_python_stacks(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    trace = str(tmp_path / "t.strata")
    proc = subprocess.run([STRATA, "record", "--quiet", "--sample", "-o", trace, "--", SYSTEM_PYTHON, str(script)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "80"
    text = run_strata("info", trace).stdout
    # The loop and its two workers (torch's import also runs `c++ --version`: a process of its own).
    pythons = {m.group(1) for m in re.finditer(r"^process (\d+) .*\n\s+command: (.*)", text, re.M)
               if m.group(2).endswith("train.py")}
    assert len(pythons) == 3, text
    per_pid = collections.defaultdict(dict)
    for m in re.finditer(r"^\s+pid (\d+)\s+(\S+)\s+(\d+)\s", text, re.M):
        per_pid[m.group(1)][m.group(2)] = int(m.group(3))
    for pid in pythons:
        stats = per_pid[pid]
        taken = stats["sample.samples_taken"]
        lost = stats.get("collector.sample_python_record", 0)
        assert taken > 50, (pid, stats)
        assert stats["sample.python_records_paired"] + lost == taken, (pid, stats)
        assert lost <= 0.03 * taken, (pid, stats)
