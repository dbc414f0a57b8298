#!/bin/sh
# bench/peers/torch-install.sh — installs the PyTorch DataLoader peer of bench/peers/torch_loader.py: Debian's
# python3-torch, python3-torchvision and python3-pil (for /usr/bin/python3). Run by `make bench`, never by `make test`.
set -eu
if /usr/bin/python3 -c "import torch, torchvision, PIL" 2>/dev/null; then exit 0; fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get install -y -q python3-torch python3-torchvision python3-pil >/dev/null
/usr/bin/python3 -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__)"
