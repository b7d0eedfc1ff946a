#!/usr/bin/python3
"""tests/golden/print.json: PyTorch 1.13's repr() of tensors that exercise each rule of its printer
(torch/_tensor_str.py): the integer, fixed and scientific modes and the width taken over nonzero
finite values only, 80-column wrapping, summarization past 1000 elements, and the dtype, size and
requires_grad suffixes with their own wrapping. Each case carries its exact values, so the test
builds the same tensor without depending on strider's arithmetic.

    /usr/bin/python3 tests/golden/generate_print.py > tests/golden/print.json
"""
import json
import torch

inf, nan = float("inf"), float("nan")
CASES = {
    "scientific_for_integers_over_a_ratio_of_1000": torch.tensor([1.0, 1001.0]),
    "scientific_summarized": torch.arange(2000.0),
    "width_ignores_non_finite": torch.tensor([inf, -inf, nan, 1.0]),
    "zero_and_inf": torch.tensor([0.0, inf]),
    "only_non_finite": torch.tensor([nan, inf]),
    "vector_wraps_at_80_columns": torch.arange(30.0),
    "matrix_rows_wrap": torch.arange(30.0).reshape(2, 15),
    "scientific_wraps": torch.linspace(-1, 1, 25),
    "small_values_scientific": torch.tensor([1e-5, 1.0]),
    "large_integers_scientific": torch.tensor([1e9, 1.0]),
    "negative_zero": torch.tensor([-0.0, 1.0]),
    "summarized_integer_matrix": torch.arange(1200).reshape(3, 400),
    "summarized_3d": torch.arange(1100.0).reshape(2, 22, 25) / 7,
    "three_dimensions": (torch.arange(12.0).reshape(2, 2, 3) - 5) / 4,
    "booleans": torch.arange(8).reshape(2, 2, 2) % 3 == 0,
    "scalar_float": torch.tensor(3.5),
    "scalar_long": torch.tensor(7),
    "empty_long": torch.tensor([], dtype=torch.long),
    "empty_matrix": torch.zeros(0, 3),
    "empty_double_matrix": torch.zeros(0, 3, dtype=torch.float64),
    "requires_grad": torch.tensor([1.0, 2.0], requires_grad=True),
    "dtype_then_requires_grad": torch.tensor([1.5, 2.5], dtype=torch.float64, requires_grad=True),
    "suffixes_wrap": torch.linspace(0, 1, 11, dtype=torch.float64).requires_grad_(),
    "integers_wrap": torch.arange(40) * 1000,
    "float16": torch.tensor([0.5, 1.25], dtype=torch.float16),
    "int32": torch.tensor([1, -20], dtype=torch.int32),
    "uint8": torch.tensor([1, 200], dtype=torch.uint8),
    "int64_past_2_to_the_53": torch.tensor([2**62 + 1, -(2**63), 2**63 - 1]),
    "bfloat16": torch.tensor([0.1, -2.5, 300.0], dtype=torch.bfloat16),
    "scalar_requires_grad": torch.tensor(2.0, requires_grad=True),
}


def values(t):
    flat = t.detach().reshape(-1)
    if t.dtype.is_floating_point:
        return [v if v == v and abs(v) != inf else str(v) for v in flat.double().tolist()]
    return [int(v) for v in flat.tolist()]


print(json.dumps([{"name": name, "dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
                   "values": values(t), "requires_grad": t.requires_grad, "repr": repr(t)}
                  for name, t in CASES.items()], indent=1))
