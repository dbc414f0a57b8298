#!/usr/bin/python3
"""msssim_ref.py — outside oracle for the MS-SSIM / SSIM / PSNR of tests/test_pcr_*.c
(mlsys_pcr_msssim, mlsys_pcr_psnr; spec /work/shared/specs/pcr.md §3.6).

Regenerate the test-vector file (Debian's python3-numpy and python3-scipy, not the pyenv python):

    /usr/bin/python3 tools/msssim_ref.py > tests/data/pcr_msssim_ref.txt

Other uses:

    /usr/bin/python3 tools/msssim_ref.py --dump vnoise 3 20 6 64 48 3 /tmp/v.bin   # raw bytes: x then y
    /usr/bin/python3 tools/msssim_ref.py --sha                                     # SHA-256 of x||y per vector
    /usr/bin/python3 tools/msssim_ref.py --fft                                     # values via fftconvolve

The metric is a line-by-line numpy/scipy port of TensorFlow-models research/compression/image_encoder/msssim.py
(the PCR authors' repo ships it as metric.py): _FSpecialGauss, _SSIMForMultiScale, MultiScaleSSIM with the
default arguments (max_val 255, filter_size 11, filter_sigma 1.5, k1 0.01, k2 0.03, 5 levels, weights
0.0448 0.2856 0.3001 0.2363 0.1333). The one deliberate change: the 'valid' Gaussian filtering uses direct
convolution (scipy.signal.convolve(method='direct')) instead of signal.fftconvolve, so that the reference is
free of FFT round-off; the file is always generated with both and the header records the largest relative
difference between them. No clamping: a negative cs (or level-5 ssim) raised to a fractional weight is NaN
exactly as in the original, and is written as "nan" (the C side clamps at 0; the clamped value is given in a
comment line).

The test images are defined by integer-only generators (uint32 arithmetic, wrapping mod 2^32), written out in
the header of the output (HEADER below) so that C reproduces them bit-exactly from (pattern, a, b, s, H, W, C).
When this was written, a C transcription of that header produced byte-identical images for every vector (SHA-256
of x||y, see --sha), and a naive direct C MS-SSIM written from spec §3.6 matched every value within 4e-14 relative.
"""
import argparse
import hashlib
import math
import sys

import numpy as np
from scipy import ndimage, signal

# ----------------------------------------------------------------------------------------------------------
# Port of TF-models msssim.py
# ----------------------------------------------------------------------------------------------------------

USE_FFT = False  # set by --fft; the file is written with direct convolution


def _FSpecialGauss(size, sigma):
    """Function to mimic the 'fspecial' gaussian MATLAB function."""
    radius = size // 2
    offset = 0.0
    start, stop = -radius, radius + 1
    if size % 2 == 0:
        offset = 0.5
        stop -= 1
    x, y = np.mgrid[offset + start:stop, offset + start:stop]
    assert len(x) == size
    g = np.exp(-((x**2 + y**2) / (2.0 * sigma**2)))
    return g / g.sum()


def _valid_conv(img, window):
    if USE_FFT:
        return signal.fftconvolve(img, window, mode='valid')
    return signal.convolve(img, window, mode='valid', method='direct')


def _SSIMForMultiScale(img1, img2, max_val=255, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03):
    if img1.shape != img2.shape:
        raise RuntimeError('Input images must have the same shape (%s vs. %s).' % (img1.shape, img2.shape))
    if img1.ndim != 4:
        raise RuntimeError('Input images must have four dimensions, not %d' % img1.ndim)
    img1 = img1.astype(np.float64)
    img2 = img2.astype(np.float64)
    _, height, width, _ = img1.shape

    # Filter size can't be larger than height or width of images.
    size = min(filter_size, height, width)
    # Scale down sigma if a smaller filter size is used.
    sigma = size * filter_sigma / filter_size if filter_size else 0

    if filter_size:
        window = np.reshape(_FSpecialGauss(size, sigma), (1, size, size, 1))
        mu1 = _valid_conv(img1, window)
        mu2 = _valid_conv(img2, window)
        sigma11 = _valid_conv(img1 * img1, window)
        sigma22 = _valid_conv(img2 * img2, window)
        sigma12 = _valid_conv(img1 * img2, window)
    else:
        mu1, mu2 = img1, img2
        sigma11 = img1 * img1
        sigma22 = img2 * img2
        sigma12 = img1 * img2

    mu11 = mu1 * mu1
    mu22 = mu2 * mu2
    mu12 = mu1 * mu2
    sigma11 -= mu11
    sigma22 -= mu22
    sigma12 -= mu12

    c1 = (k1 * max_val) ** 2
    c2 = (k2 * max_val) ** 2
    v1 = 2.0 * sigma12 + c2
    v2 = sigma11 + sigma22 + c2
    ssim = np.mean((((2.0 * mu12 + c1) * v1) / ((mu11 + mu22 + c1) * v2)))
    cs = np.mean(v1 / v2)
    return ssim, cs


def MultiScaleSSIM(img1, img2, max_val=255, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03, weights=None,
                   levels_out=None):
    """MS-SSIM of two (1, H, W, C) arrays; levels_out (a list) receives (mssim, mcs) when given."""
    if img1.shape != img2.shape:
        raise RuntimeError('Input images must have the same shape (%s vs. %s).' % (img1.shape, img2.shape))
    if img1.ndim != 4:
        raise RuntimeError('Input images must have four dimensions, not %d' % img1.ndim)

    weights = np.array(weights if weights else [0.0448, 0.2856, 0.3001, 0.2363, 0.1333])
    levels = weights.size
    downsample_filter = np.ones((1, 2, 2, 1)) / 4.0
    im1, im2 = [x.astype(np.float64) for x in [img1, img2]]
    mssim = np.array([])
    mcs = np.array([])
    for _ in range(levels):
        ssim, cs = _SSIMForMultiScale(im1, im2, max_val=max_val, filter_size=filter_size,
                                      filter_sigma=filter_sigma, k1=k1, k2=k2)
        mssim = np.append(mssim, ssim)
        mcs = np.append(mcs, cs)
        filtered = [ndimage.convolve(im, downsample_filter, mode='reflect') for im in [im1, im2]]
        im1, im2 = [x[:, ::2, ::2, :] for x in filtered]
    if levels_out is not None:
        levels_out.append((mssim.copy(), mcs.copy()))
    with np.errstate(invalid='ignore'):  # negative ** fractional -> nan, as in the original (which warns)
        return (np.prod(mcs[0:levels - 1] ** weights[0:levels - 1]) *
                (mssim[levels - 1] ** weights[levels - 1]))


def psnr(x, y):
    d = x.astype(np.float64) - y.astype(np.float64)
    mse = np.mean(d * d)
    if mse == 0:
        return math.inf
    return 10.0 * math.log10(255.0 * 255.0 / mse)


# ----------------------------------------------------------------------------------------------------------
# Integer-only image generators (see HEADER for the C-like definitions; keep the two in sync)
# ----------------------------------------------------------------------------------------------------------

U32 = np.uint32


def lowbias32(x):
    x = np.array(x, dtype=U32, ndmin=1)  # arrays wrap mod 2^32 silently (0-d scalars would warn)
    x = x ^ (x >> U32(16))
    x = x * U32(0x7feb352d)
    x = x ^ (x >> U32(15))
    x = x * U32(0x846ca68b)
    x = x ^ (x >> U32(16))
    return x


def H(p, q, r, s):
    h = lowbias32(U32(s) ^ U32(0x9e3779b9))
    h = lowbias32(h ^ np.asarray(p, dtype=U32))
    h = lowbias32(h ^ np.asarray(q, dtype=U32))
    h = lowbias32(h ^ np.asarray(r, dtype=U32))
    return h


def V(a, i, j, r, s):
    """Bilinear value noise, lattice cell K = 2^a; i, j: broadcastable int arrays."""
    K = 1 << a
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    ci, fi, cj, fj = i >> a, i & (K - 1), j >> a, j & (K - 1)

    def h(p, q):
        return (H(p, q, r, s) & U32(255)).astype(np.int64)

    num = (h(ci, cj) * (K - fi) * (K - fj) + h(ci + 1, cj) * fi * (K - fj) +
           h(ci, cj + 1) * (K - fi) * fj + h(ci + 1, cj + 1) * fi * fj + ((K * K) >> 1))
    return num >> (2 * a)


def grids(Hh, W, C):
    i = np.arange(Hh, dtype=np.int64).reshape(Hh, 1, 1)
    j = np.arange(W, dtype=np.int64).reshape(1, W, 1)
    c = np.arange(C, dtype=np.int64).reshape(1, 1, C)
    return i, j, c


def gen_vn(a, s, Hh, W, C):
    i, j, c = grids(Hh, W, C)
    x = (2 * V(a, i, j, 0, s) + V(a, i, j, 1 + c, s) + V(1, i, j, 4 + c, s) + 2) >> 2
    return np.broadcast_to(x, (Hh, W, C)).astype(np.int64)


def generate(pattern, a, b, s, Hh, W, C):
    """Returns (x, y) as uint8 arrays of shape (H, W, C)."""
    i, j, c = grids(Hh, W, C)
    if pattern == 'ramp':
        iu, ju, cu = i.astype(U32), j.astype(U32), c.astype(U32)
        x = (U32(a) * iu + U32(b) * ju + U32(37) * cu + ((iu * ju * U32(s)) >> U32(3))) & U32(255)
        x = np.broadcast_to(x, (Hh, W, C)).astype(np.int64)
        n = ((iu * U32(31) + ju * U32(17) + cu * U32(7) + U32(s)) % U32(41)).astype(np.int64)
        y = np.clip(x + n - 20, 0, 255)
    elif pattern in ('vnoise', 'block', 'ident', 'invert'):
        x = gen_vn(a, s, Hh, W, C)
        if pattern == 'vnoise':
            n = (H(i, j, 8 + c, s) % U32(2 * b + 1)).astype(np.int64)
            y = np.clip(x + n - b, 0, 255)
        elif pattern == 'block':
            B = 1 << b
            y = np.empty_like(x)
            for i0 in range(0, Hh, B):
                for j0 in range(0, W, B):
                    blk = x[i0:i0 + B, j0:j0 + B, :]
                    n = blk.shape[0] * blk.shape[1]
                    y[i0:i0 + B, j0:j0 + B, :] = (blk.sum(axis=(0, 1)) + n // 2) // n
        elif pattern == 'ident':
            y = x.copy()
        else:
            y = 255 - x
    else:
        raise ValueError(pattern)
    x = np.ascontiguousarray(x)
    assert x.min() >= 0 and x.max() <= 255 and y.min() >= 0 and y.max() <= 255
    return x.astype(np.uint8), np.ascontiguousarray(y).astype(np.uint8)


# pattern a b s H W C
VECTORS = [
    ('vnoise', 2, 12, 1, 1, 1, 1),
    ('vnoise', 2, 30, 2, 1, 1, 3),
    ('ramp', 40, 90, 1, 2, 2, 1),
    ('block', 1, 1, 3, 3, 5, 3),
    ('ramp', 7, 3, 2, 5, 7, 3),
    ('vnoise', 2, 16, 4, 11, 11, 1),
    ('ramp', 2, 3, 1, 12, 200, 3),
    ('block', 3, 2, 5, 40, 33, 3),
    ('vnoise', 3, 20, 6, 64, 48, 3),
    ('block', 4, 3, 7, 176, 176, 1),
    ('vnoise', 4, 8, 8, 177, 181, 3),
    ('ramp', 1, 2, 3, 181, 177, 3),
    ('block', 4, 3, 9, 320, 240, 3),
    ('vnoise', 5, 40, 10, 240, 320, 3),
    ('ident', 3, 0, 12, 64, 48, 3),
    ('ident', 2, 0, 13, 177, 181, 1),
    ('invert', 0, 0, 11, 64, 64, 3),
]

HEADER = r"""# pcr_msssim_ref.txt — MS-SSIM / level-1 SSIM / PSNR test vectors for mlsys_pcr_msssim and mlsys_pcr_psnr
# (spec /work/shared/specs/pcr.md §3.6). GENERATED, do not edit:
#     /usr/bin/python3 tools/msssim_ref.py > tests/data/pcr_msssim_ref.txt
# Oracle: numpy/scipy port of TF-models msssim.py (= PCR repo metric.py), defaults max_val 255, filter 11,
# sigma 1.5, k1 .01, k2 .03, weights .0448 .2856 .3001 .2363 .1333, downsample = scipy.ndimage.convolve with
# ones(2,2)/4, mode 'reflect', then [::2, ::2]. 'valid' filtering by DIRECT convolution
# (scipy.signal.convolve method='direct'); the original's signal.fftconvolve gives the same numbers to within
# @FFTDIFF@ relative (largest over all finite values below). numpy @NPV@, scipy @SPV@.
# No clamping: cs_l < 0 (l = 1..4) or ssim_5 < 0 makes msssim "nan" as in the original (C pow() gives NaN too).
# After each data line: "#L cs cs_1..cs_5" and "#L ssim ssim_1..ssim_5" (per level; cs_5 is not used), and for a
# nan vector "#L clamped v", v = MS-SSIM with cs_l and ssim_5 clamped at 0 before the power.
#
# Data line: pattern a b s H W C msssim ssim1 psnr      (%.17g; psnr "inf" when the images are equal)
#   x = reference (img1), y = distorted (img2), both H x W x C uint8, stored row-major interleaved:
#   byte index ((i*W + j)*C + c), row i in [0,H), column j in [0,W), channel c in [0,C).
#   ssim1 = level-1 SSIM (mssim[0]); psnr = 10*log10(255^2 / MSE), MSE = mean of (x-y)^2 over all H*W*C values.
#
# Generators. All arithmetic below is on uint32_t (wraps mod 2^32; >> is a logical shift) unless marked int;
# i, j, c, a, b, s are converted to uint32_t first. C precedence: * / % before + -, before << >>, before &, ^.
#   L(x): x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16; return x;
#   HASH(p, q, r, s) = L(L(L(L(s ^ 0x9e3779b9U) ^ p) ^ q) ^ r)
#   V(a, i, j, r, s):  K = 1 << a; ci = i >> a; fi = i & (K-1); cj = j >> a; fj = j & (K-1);
#       h(p, q) = HASH(p, q, r, s) & 255;
#       V = ( h(ci,cj)*(K-fi)*(K-fj) + h(ci+1,cj)*fi*(K-fj) + h(ci,cj+1)*(K-fi)*fj + h(ci+1,cj+1)*fi*fj
#             + ((K*K) >> 1) ) >> (2*a)                                       (0..255; a in 0..6)
#   VN(a, s)(i, j, c) = ( 2*V(a,i,j,0,s) + V(a,i,j,1+c,s) + V(1,i,j,4+c,s) + 2 ) >> 2      (0..255)
#   clamp(v) = v < 0 ? 0 : v > 255 ? 255 : v                                   (int v)
# Patterns (x, y):
#   ramp   x = ( a*i + b*j + 37*c + ((i*j*s) >> 3) ) & 255
#          y = clamp( (int)x + (int)((i*31 + j*17 + c*7 + s) % 41) - 20 )
#   vnoise x = VN(a, s)(i, j, c)
#          y = clamp( (int)x + (int)(HASH(i, j, 8 + c, s) % (2*b + 1)) - (int)b )
#   block  x = VN(a, s)(i, j, c)
#          y = rounded mean of x over the aligned 2^b x 2^b block holding (i, j), channel c, cut at the image edge:
#              i0 = (i >> b) << b, j0 = (j >> b) << b, rows [i0, min(i0 + 2^b, H)), cols [j0, min(j0 + 2^b, W)),
#              n = number of pixels in it, S = sum of x over it; y = (S + n/2) / n   (integer division)
#   ident  x = VN(a, s)(i, j, c), y = x                     (msssim must be exactly 1, ssim1 1, psnr inf)
#   invert x = VN(a, s)(i, j, c), y = 255 - x               (anti-correlated: negative cs -> nan)
#
"""


def fmt(v):
    return '%.17g' % v


def compute(vec, use_fft):
    global USE_FFT
    USE_FFT = use_fft
    pattern, a, b, s, Hh, W, C = vec
    x, y = generate(*vec)
    lv = []
    m = MultiScaleSSIM(x.reshape(1, Hh, W, C).astype(np.float64), y.reshape(1, Hh, W, C).astype(np.float64),
                       levels_out=lv)
    mssim, mcs = lv[0]
    return float(m), float(mssim[0]), psnr(x, y), mssim, mcs


def clamped(mssim, mcs):
    w = np.array([0.0448, 0.2856, 0.3001, 0.2363, 0.1333])
    return float(np.prod(np.maximum(mcs[0:4], 0.0) ** w[0:4]) * (max(mssim[4], 0.0) ** w[4]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--fft', action='store_true', help='print values computed with fftconvolve instead')
    ap.add_argument('--sha', action='store_true', help='print SHA-256 of x||y for every vector')
    ap.add_argument('--dump', nargs=8, metavar=('PATTERN', 'A', 'B', 'S', 'H', 'W', 'C', 'OUT'),
                    help='write x then y (raw uint8, H*W*C each) to OUT')
    args = ap.parse_args()

    if args.dump:
        vec = (args.dump[0],) + tuple(int(v) for v in args.dump[1:7])
        x, y = generate(*vec)
        with open(args.dump[7], 'wb') as f:
            f.write(x.tobytes())
            f.write(y.tobytes())
        return
    if args.sha:
        for vec in VECTORS:
            x, y = generate(*vec)
            print(' '.join(str(v) for v in vec), hashlib.sha256(x.tobytes() + y.tobytes()).hexdigest())
        return

    rows = []
    maxrel = 0.0
    for vec in VECTORS:
        d = compute(vec, args.fft)
        f = compute(vec, not args.fft)
        for p, q in zip((d[0], d[1], d[2]) + tuple(d[3]) + tuple(d[4]), (f[0], f[1], f[2]) + tuple(f[3]) + tuple(f[4])):
            if math.isfinite(p) and math.isfinite(q):
                maxrel = max(maxrel, abs(p - q) / max(abs(p), abs(q), 1e-300))
            elif not (math.isnan(p) and math.isnan(q)) and p != q:
                raise SystemExit('direct/fft disagree on finiteness for %r: %r vs %r' % (vec, p, q))
        rows.append((vec, d))

    out = sys.stdout
    hdr = HEADER.replace('@FFTDIFF@', '%.1e' % maxrel).replace('@NPV@', np.__version__)
    hdr = hdr.replace('@SPV@', __import__('scipy').__version__)
    if args.fft:
        hdr = hdr.replace("'valid' filtering by DIRECT convolution", "'valid' filtering by FFT (--fft)")
    out.write(hdr)
    for vec, (m, s1, ps, mssim, mcs) in rows:
        out.write(' '.join(str(v) for v in vec) + ' ' + ' '.join(fmt(v) for v in (m, s1, ps)) + '\n')
        out.write('#L cs ' + ' '.join(fmt(v) for v in mcs) + '\n')
        out.write('#L ssim ' + ' '.join(fmt(v) for v in mssim) + '\n')
        if not math.isfinite(m):
            out.write('#L clamped ' + fmt(clamped(mssim, mcs)) + '\n')


if __name__ == '__main__':
    main()
