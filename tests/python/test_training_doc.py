"""docs/training.md's example, run: a two-layer model trained through posemb.nn.Rotary whose loss
falls to under half its first value in 30 steps."""
import os
import re

from conftest import SOURCE_DIR


def test_training_example_loss_falls():
    with open(os.path.join(SOURCE_DIR, "docs", "training.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)
    assert len(blocks) == 1
    scope = {}
    exec(compile(blocks[0], "docs/training.md", "exec"), scope)  # noqa: S102
    losses = scope["losses"]
    assert len(losses) == 30 and losses[-1] < 0.5 * losses[0]
