#!/usr/bin/env python3
# tools/cuda_emu/xform.py SRC DST — rewrites a .cu/.cuh file for tools/cuda_emu/emu.h: kernel launches
# `k<<<grid, block[, shmem]>>>(args);` (one per line) become emu_launch([=] { k(args); }, grid, block[, shmem]), the
# one dynamic shared array becomes a static one, and emu.h is included after mlsys_relm.h.
import re, sys
src, dst = sys.argv[1], sys.argv[2]
s = open(src).read()
s = s.replace('extern __shared__ float sc[];', 'static float sc[8192];')
s = re.sub(r'(\w+)<<<(.*?)>>>\((.*)\);', lambda m: 'emu_launch([=] { %s(%s); }, %s);' % (m.group(1), m.group(3), m.group(2)), s)
s = s.replace('#include "mlsys_relm.h"', '#include "mlsys_relm.h"\n#include "tools/cuda_emu/emu.h"', 1)
s = s.replace('#define MLSYS_CUDA\n', '')
open(dst, 'w').write(s)
