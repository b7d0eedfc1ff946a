"""Golden values for tests/data (strider::data against torch.utils.data and torchvision).

Run once with the interpreter that has torch 1.13 and torchvision:
    /usr/bin/python3 tests/golden/generate_data.py > tests/golden/data.json
The tests read data.json and need no Python.
"""
import json

import torch
import torchvision
import torchvision.transforms.functional as F
from torch.utils.data.distributed import DistributedSampler


def distributed_cases():
    cases = []
    for size in (1, 3, 7, 10, 11):
        for replicas in (1, 2, 3, 4):
            for drop_last in (False, True):
                if drop_last and size < replicas:
                    continue  # PyTorch would give every rank nothing
                ranks = []
                for rank in range(replicas):
                    s = DistributedSampler(range(size), num_replicas=replicas, rank=rank, shuffle=False,
                                           drop_last=drop_last)
                    ranks.append(list(iter(s)))
                cases.append({"size": size, "num_replicas": replicas, "drop_last": drop_last, "ranks": ranks})
    return cases


def tensor_case(x):
    return {"sizes": list(x.shape), "dtype": str(x.dtype).replace("torch.", ""),
            "values": [float(v) for v in x.flatten().tolist()]}


def normalize_cases():
    g = torch.Generator().manual_seed(29)
    x = torch.rand(3, 4, 5, generator=g)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    y = F.normalize(x, mean, std)
    x1 = torch.rand(1, 3, 2, generator=g) * 255
    y1 = F.normalize(x1, [0.5], [0.25])
    return [{"mean": mean, "std": std, "input": tensor_case(x), "output": tensor_case(y)},
            {"mean": [0.5], "std": [0.25], "input": tensor_case(x1), "output": tensor_case(y1)}]


def resize_cases():
    g = torch.Generator().manual_seed(291)
    cases = []
    image = torch.randint(0, 256, (3, 7, 9), generator=g, dtype=torch.uint8)
    for h, w in ((4, 5), (13, 11), (7, 18), (3, 3), (14, 18), (1, 1)):
        cases.append({"input": tensor_case(image), "height": h, "width": w,
                      "output": tensor_case(F.resize(image, [h, w], antialias=False))})
    image = torch.rand(2, 6, 5, generator=g)
    for h, w in ((9, 4), (3, 8), (12, 10), (5, 2)):
        cases.append({"input": tensor_case(image), "height": h, "width": w,
                      "output": tensor_case(F.resize(image, [h, w], antialias=False))})
    return cases


print(json.dumps({"torch": torch.__version__, "torchvision": torchvision.__version__,
                  "distributed_sampler": distributed_cases(), "normalize": normalize_cases(),
                  "resize": resize_cases()}))
