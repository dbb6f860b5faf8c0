"""Reference draws of posemb::SeededNormal (include/posemb/random.hpp), computed here from the
formula alone: MT19937-64 written out from its published parameters (Matsumoto and Nishimura,
as std::mt19937_64 defines it), then Box-Muller. Prints the C++ table tests/test_random.cpp
pins. Run: python3 tests/data/random/make_values.py
"""
import math

MASK = (1 << 64) - 1


class MT19937_64:
    n, m = 312, 156
    a = 0xB5026F5AA96619E9
    upper, lower = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed):
        self.mt = [seed & MASK]
        for i in range(1, self.n):
            prev = self.mt[-1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK)
        self.index = self.n

    def twist(self):
        mt = self.mt
        for i in range(self.n):
            x = (mt[i] & self.upper) | (mt[(i + 1) % self.n] & self.lower)
            xa = x >> 1
            if x & 1:
                xa ^= self.a
            mt[i] = mt[(i + self.m) % self.n] ^ xa
        self.index = 0

    def __call__(self):
        if self.index >= self.n:
            self.twist()
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK


def normals(seed, count):
    engine = MT19937_64(seed)
    out = []
    while len(out) < count:
        u1 = ((engine() >> 11) + 0.5) * 2.0**-53
        u2 = ((engine() >> 11) + 0.5) * 2.0**-53
        r = math.sqrt(-2.0 * math.log(u1))
        theta = 6.283185307179586 * u2
        out += [r * math.cos(theta), r * math.sin(theta)]
    return out[:count]


# The C++ standard's check of the engine ([rand.predef]): the 10000th output from seed 5489.
engine = MT19937_64(5489)
for _ in range(9999):
    engine()
assert engine() == 9981545732273789042

for seed in (0, 42, 2**64 - 1):
    print(f"    {{{seed}u, {{" + ", ".join(f"{z!r}" for z in normals(seed, 6)) + "}},")
