"""Vector addition C = A + B: the streaming baseline.

Source: NVIDIA CUDA SDK, vectorAdd, kernel ``vectorAdd`` (vectorAdd.cu).

Index arithmetic: threadsPerBlock = 256, blocksPerGrid = ceil(numElements/256);
i = blockDim.x*blockIdx.x + threadIdx.x; if (i < numElements) C[i] = A[i] + B[i] + 0.0f.
Every element is read once and written once: no reuse beyond the 128-B line.
"""
from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec


def build(n: int = 1 << 20, block: int = 256):
    p = Program("vectoradd", source=MODEL.source)
    A = p.array("d_A", n)
    B = p.array("d_B", n)
    C = p.array("d_C", n, copy_in=False)
    with p.kernel("vectorAdd", grid=-(-n // block), block=block, regs=8) as k:
        i = k.blockIdx.x * block + k.threadIdx.x
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD")
        k.alu(op="ISETP.GE.AND")
        with k.where(i < n):
            a = k.load(A, i)
            b = k.load(B, i)
            k.store(C, i, k.alu(a, b, op="FADD"))
    return p.trace()


MODEL = ModelSpec(
    name="vectoradd",
    klass="streaming",
    description="vector add: each element read once, written once",
    source="NVIDIA CUDA SDK vectorAdd: vectorAdd (vectorAdd.cu)",
    sizes={"tiny": dict(n=50000), "small": dict(n=1 << 20), "medium": dict(n=1 << 23), "large": dict(n=1 << 25)},
    build=build,
)
