#!/usr/bin/env python3
"""gen_2opi.py: hkm_2opi_bits, the table of 2/pi's bits in common/hkmath.h
(double sin and cos, Payne and Hanek's reduction).

pi from Machin's formula, 16 atan(1/5) - 4 atan(1/239), in integer
arithmetic at 1,500 bits; 2/pi's fraction bits after 26 zero bits (so that
bit e + 24 starts the window of 2^e 2/pi mod 4 for e >= -24), most
significant first, in 32-bit words w_k; entry k holds w_k and w_k+1.
Prints the C initialiser; with --check FILE, exits 1 unless FILE holds it
as printed (ctest math_table: the table in common/hkmath.h)."""

P = 1500


def atan_inv(k, bits):
    """atan(1/k) * 2^bits, by its Taylor series."""
    x = (1 << bits) // k
    s, n, sign, k2 = x, 1, -1, k * k
    while x:
        x //= k2
        n += 2
        s += sign * (x // n)
        sign = -sign
    return s


def table():
    fb = P + 20
    pi = 16 * atan_inv(5, fb) - 4 * atan_inv(239, fb)  # pi * 2^fb
    two_over_pi = (2 << (2 * fb)) // pi  # (2/pi) * 2^fb
    bits = [0] * 26 + [(two_over_pi >> (fb - j)) & 1 for j in range(1, 1201)]
    words = []
    for w in range(len(bits) // 32):
        v = 0
        for b in bits[32 * w:32 * w + 32]:
            v = (v << 1) | b
        words.append(v)
    pairs = [(words[i] << 32) | words[i + 1] for i in range(37)]
    return ("HKM_TABLE uint64_t hkm_2opi_bits[37] = {\n" +
            ",\n".join("    " + ", ".join("0x%016xull" % v
                                            for v in pairs[i:i + 3])
                        for i in range(0, 37, 3)) + "};")


def main(argv):
    t = table()
    if len(argv) == 3 and argv[1] == "--check":
        with open(argv[2], encoding="utf-8") as f:
            if t not in f.read():
                print("%s: hkm_2opi_bits is not what tools/gen_2opi.py "
                      "computes" % argv[2])
                return 1
        print("%s: hkm_2opi_bits matches 2/pi's bits" % argv[2])
        return 0
    print(t)
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv))
