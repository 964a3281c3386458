import torch.nn.parallel
import torch.utils.data


def run(model, dataset, local_rank):
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    loadlambda: er = torch.utils.data.DataLoader(dataset, batch_size=128, shuffle=True, pin_memory=True)  # error: TL020    another = torch.utils.data.DataLoader(dataset, shuffle=True)  # error: TL020  # noqa: TL020
    return loader, another
