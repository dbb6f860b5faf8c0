"""The two synthetic tasks of the length-generalisation bench, generated from a seed.

Both are token sequences over a small vocabulary, so a two-layer model learns them on a CPU in
seconds, and both can be drawn at any length, so a model trained at one length is scored at longer
ones with no change of distribution other than the length:

- ``lm``: next-token prediction on text from a fixed random order-2 Markov chain (vocabulary 16,
  each context's next-token distribution a Dirichlet(0.1) draw: peaked, so the loss a model can
  reach, the chain's entropy rate, is well below log 16). Nothing in the task depends on absolute
  position; a model that generalises in length keeps its loss flat past the training length. This
  is the task behind the perplexity-against-length curves of ALiBi (Press et al. 2022, fig. 1) and
  FoPE (Hua et al. 2024, fig. 4), in miniature.
- ``passkey``: filler tokens with a key marker followed by a five-digit key at a uniformly drawn
  depth, and at the end a query marker followed by the same five digits; the model is scored on
  the five answer digits (a trial counts when all five are right: with teacher forcing this is
  exactly what greedy decoding would produce). The distance to retrieve grows with the length.
  This is the passkey retrieval of Mohtashami & Jaggi 2023 as FoPE's paper uses it (Hua et al.
  2024, fig. 5), with random filler in place of repeated sentences.

Every sequence is [batch, length] int64; ``targets`` gives the token each position predicts and
``mask`` which positions are scored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

LM_VOCAB = 16
# passkey: digits 0..9, filler 10..29, key marker 30, query marker 31
PASSKEY_DIGITS = 5
DIGITS = 10
PASSKEY_VOCAB = 32
KEY_MARKER = 30
QUERY_MARKER = 31
PASSKEY_MIN_LENGTH = 2 * (PASSKEY_DIGITS + 1) + 4  # key, answer and a little filler


@dataclass(frozen=True)
class Batch:
    tokens: torch.Tensor   # [batch, length] int64, the model's input
    targets: torch.Tensor  # [batch, length] int64, the token each position predicts
    mask: torch.Tensor     # [batch, length] bool, the positions the loss and accuracy count


class MarkovLm:
    """Text from an order-2 Markov chain over LM_VOCAB tokens; the chain is fixed by `chain_seed`."""

    vocab = LM_VOCAB

    def __init__(self, chain_seed: int = 0):
        g = torch.Generator().manual_seed(chain_seed)
        alpha = torch.full((LM_VOCAB,), 0.1, dtype=torch.float64)
        # transition[a, b] is the distribution of the token after (a, b): [V, V, V]
        gamma = torch._standard_gamma(alpha.expand(LM_VOCAB, LM_VOCAB, LM_VOCAB).contiguous(), g)
        self.transition = gamma / gamma.sum(-1, keepdim=True)
        self.cdf = self.transition.cumsum(-1).numpy()

    def entropy_rate(self) -> float:
        """The chain's entropy per token in nats (its stationary distribution by power iteration):
        the lowest loss any model can reach on this task."""
        v = LM_VOCAB
        pair = torch.full((v, v), 1.0 / (v * v), dtype=torch.float64)
        for _ in range(500):
            pair = torch.einsum("ab,abc->bc", pair, self.transition)
        h = -(self.transition * self.transition.clamp_min(1e-300).log()).sum(-1)
        return float((pair * h).sum())

    def batch(self, batch: int, length: int, g: torch.Generator) -> Batch:
        seq = np.empty((batch, length + 1), dtype=np.int64)
        seq[:, :2] = torch.randint(0, LM_VOCAB, (batch, 2), generator=g).numpy()
        uniform = torch.rand(batch, length + 1, dtype=torch.float64, generator=g).numpy()
        for t in range(2, length + 1):  # inverse-CDF sampling of each next token
            cdf = self.cdf[seq[:, t - 2], seq[:, t - 1]]  # [batch, V]
            seq[:, t] = np.minimum((cdf < uniform[:, t, None]).sum(-1), LM_VOCAB - 1)
        seq = torch.from_numpy(seq)
        mask = torch.ones(batch, length, dtype=torch.bool)
        mask[:, :2] = False  # the first two tokens have no order-2 context
        return Batch(seq[:, :-1], seq[:, 1:], mask)


class Passkey:
    """Filler, then KEY d1..d5 at a uniform depth, and QUERY d1..d5 last; scored on the answer."""

    vocab = PASSKEY_VOCAB

    def batch(self, batch: int, length: int, g: torch.Generator) -> Batch:
        span = PASSKEY_DIGITS + 1
        seq = torch.randint(DIGITS, KEY_MARKER, (batch, length + 1), generator=g)
        digits = torch.randint(0, DIGITS, (batch, PASSKEY_DIGITS), generator=g)
        # the key's marker at a uniform depth among the positions before the answer: [batch]
        key_at = torch.randint(0, length + 1 - 2 * span + 1, (batch,), generator=g)
        rows = torch.arange(batch)[:, None]
        seq[rows, key_at[:, None] + torch.arange(span)] = torch.cat(
            [torch.full((batch, 1), KEY_MARKER), digits], dim=1)
        seq[:, -span:] = torch.cat([torch.full((batch, 1), QUERY_MARKER), digits], dim=1)
        mask = torch.zeros(batch, length, dtype=torch.bool)
        mask[:, -PASSKEY_DIGITS:] = True  # the positions that predict the five answer digits
        return Batch(seq[:, :-1], seq[:, 1:], mask)


TASKS = {"lm": MarkovLm, "passkey": Passkey}
