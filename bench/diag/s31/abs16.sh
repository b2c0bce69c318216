#!/usr/bin/env bash
# Build and run abs16.cu on the GPU machine (sm_90), with its SASS.
cd "$(dirname "$0")" && nvcc -O3 -arch=sm_90 -o /tmp/abs16 abs16.cu && /tmp/abs16
cuobjdump -sass /tmp/abs16 2>/dev/null | grep -E "Function|IABS|ISETP|SHF|PRMT|SGXT|LOP3|SEL|STG" | head -60
