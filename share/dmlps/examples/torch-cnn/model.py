"""The convolutional network of this example, shared by worker.py and
evaluator.py: both must build the same module, since the server checks the
workers' layout against the first one's and the evaluator reads the flat
vector in that layout.

Two 3x3 convolutions (8 and 16 channels), each followed by ReLU and 2x2
max pooling, then a 64-unit hidden layer and the 10 classes: 52,138
parameters, about 0.3 M multiply-adds a sample, cheap enough for a few
workers on a small CPU. It takes the rows dmlps.load_train gives (784
floats a sample) and reshapes them to 1x28x28 images itself, so that
dmlps.torch's callback and evaluator feed it as they feed an MLP. (For one
with BatchNorm and Dropout, whose running statistics travel through the
server as the model's state, see ../torch-resnet.)"""

import torch


def cnn(classes=10):
    """A fresh module (PyTorch's default initialisation, from torch's
    current random state)."""
    nn = torch.nn
    return nn.Sequential(
        nn.Unflatten(1, (1, 28, 28)),
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 8 x 14 x 14
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 16 x 7 x 7
        nn.Flatten(),
        nn.Linear(16 * 7 * 7, 64), nn.ReLU(),
        nn.Linear(64, classes))
