"""Working code whose findings have safe fixes: each `case_*` returns what it computes, and the
safe fixes must leave that unchanged (dtype, device, shape and values), whatever the default dtype."""
import torch
import torch.nn as nn


def case_float_weights_from_integers():
    return torch.Tensor([1, 2, 3])


def case_float_weights_from_decimals():
    return torch.Tensor([[0.5, -1], [2, 3]])


def case_empty_results_to_fill():
    return torch.Tensor([]), torch.Tensor([[]])


def case_float_weights_from_a_name():
    scale = 0.25
    return torch.Tensor([scale, 1])


def case_float_weights_from_a_scalar_tensor():
    return torch.Tensor([torch.tensor(2.0, dtype=torch.float64)])


def case_typed_constructor_keeps_its_dtype():
    return torch.FloatTensor([1, 2]), torch.LongTensor([3, 4]), torch.BoolTensor([True, False])


def case_shape_filled_at_once():
    return torch.Tensor(2, 3).fill_(0.5)


def case_parameter_filled_by_init():
    weight = nn.Parameter(torch.Tensor(4, 2))
    nn.init.constant_(weight, 1.5)
    return weight.detach()


def case_values_and_indices_of_a_row_minimum():
    w = torch.arange(6.0).view(2, 3)
    return w.min(axis=1, keepdim=True)[0]


def case_first_of_an_unreduced_loss():
    per_sample = nn.functional.mse_loss(torch.arange(3.0), torch.zeros(3), reduction="none")
    return per_sample.data[0]


def case_softmax_over_a_batch_of_vectors():
    torch.manual_seed(0)
    features = torch.randn(4, 2, 3)
    logits = nn.Linear(6, 5)(features.flatten(start_dim=1))
    return nn.functional.softmax(logits), nn.functional.log_softmax(logits.view(4, -1))


def case_softmin_of_a_vector():
    return nn.functional.softmin(torch.arange(4.0))
