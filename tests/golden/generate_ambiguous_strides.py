"""The strides PyTorch 1.13 gives where only size-1 or empty dims tell memory formats apart,
printed for the expectations of tests/ops/memory_format_test.cpp (MemoryFormatAmbiguous):

    /usr/bin/python3 tests/golden/generate_ambiguous_strides.py

Each line: a case name, the result's strides, and for leaves x.grad's strides after backward.
"""
import torch
import torch.nn.functional as F

CL, CL3 = torch.channels_last, torch.channels_last_3d


def leaf(shape, fmt):
    n = 1
    for s in shape:
        n *= s
    return torch.arange(n, dtype=torch.float).reshape(shape).to(memory_format=fmt).requires_grad_()


def case(name, shape, fmt, f):
    x = leaf(shape, fmt)
    y = f(x)
    y.sum().backward()
    print("%-40s y%s x.grad%s" % (name, list(y.stride()), list(x.grad.stride())))


def forward(name, y):
    print("%-40s y%s" % (name, list(y.stride())))


for pool in ("max", "avg"):
    p3 = getattr(F, pool + "_pool3d")
    p2 = getattr(F, pool + "_pool2d")
    case(pool + "_pool3d [2,1,2,3,4] cl3d", [2, 1, 2, 3, 4], CL3, lambda x: p3(x, 2, 1))
    case(pool + "_pool3d [2,3,2,3,4] cl3d", [2, 3, 2, 3, 4], CL3, lambda x: p3(x, 2, 1))
    case(pool + "_pool2d [2,1,4,5] cl", [2, 1, 4, 5], CL, lambda x: p2(x, 2, 1))

for shape in ([0, 3, 4, 5], [2, 3, 0, 5]):
    x = torch.empty(shape).to(memory_format=CL)
    y = F.dropout(x, 0.5, True)
    forward("dropout %s cl (is x: %s)" % (shape, y is x), y)

forward("group_norm [0,3,4,5] cl, 3 groups", F.group_norm(torch.empty(0, 3, 4, 5).to(memory_format=CL), 3))
forward("group_norm [0,3,4,5], 1 group", F.group_norm(torch.empty(0, 3, 4, 5), 1))
forward("group_norm [0,1,4,5] cl, 1 group", F.group_norm(torch.empty(0, 1, 4, 5).to(memory_format=CL), 1))

bn = lambda x: F.batch_norm(x, None, None, torch.ones(x.shape[1]), torch.zeros(x.shape[1]), training=True)
case("batch_norm(train) [2,3,1,1] cl", [2, 3, 1, 1], CL, bn)
case("batch_norm(train) [2,1,4,5] cl", [2, 1, 4, 5], CL, bn)
case("batch_norm(train) [2,1,2,3,4] cl3d", [2, 1, 2, 3, 4], CL3, bn)
case("clamp(-1,1) [2,1,4,5] cl", [2, 1, 4, 5], CL, lambda x: x.clamp(-1, 1))
case("clamp(-1,1) [2,3,1,1] cl", [2, 3, 1, 1], CL, lambda x: x.clamp(-1, 1))
case("mean((2,3),keepdim) [2,1,4,5] cl", [2, 1, 4, 5], CL, lambda x: x.mean((2, 3), keepdim=True))
case("adaptive_avg_pool2d(1) [2,3,1,1] cl", [2, 3, 1, 1], CL, lambda x: F.adaptive_avg_pool2d(x, 1))
case("adaptive_avg_pool2d(1) [2,1,4,5] cl", [2, 1, 4, 5], CL, lambda x: F.adaptive_avg_pool2d(x, 1))

case("silu [2,1,4,5] cl", [2, 1, 4, 5], CL, F.silu)
case("silu [2,3,1,1] cl", [2, 3, 1, 1], CL, F.silu)
case("split(1, 1)[0] [2,1,4,5] cl", [2, 1, 4, 5], CL, lambda x: x.split(1, 1)[0])
case("cumsum(3) [2,3,1,1] cl", [2, 3, 1, 1], CL, lambda x: x.cumsum(3))
case("2 / x [2,1,4,5] cl", [2, 1, 4, 5], CL, lambda x: 2 / x)
case("2 / x [2,3,1,1] cl", [2, 3, 1, 1], CL, lambda x: 2 / x)

# batch_norm's backward layout depends on the output gradient too (MemoryFormatAmbiguous's
# batch_norm_backward_memory_format cases): x [1,16,9,1] strides (144,1,16,144).
x = torch.randn(144).as_strided((1, 16, 9, 1), (144, 1, 16, 144)).requires_grad_()
for name, g in (("contiguous", torch.randn(1, 16, 9, 1)),
                ("channels-last", torch.randn(1, 16, 9, 1).contiguous(memory_format=CL))):
    y = F.batch_norm(x, None, None, torch.ones(16), torch.zeros(16), training=True)
    forward("batch_norm backward, %s grad_output" % name, torch.autograd.grad(y, x, g)[0])
