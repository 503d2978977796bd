# One worker trains a small CNN (cnn:4,8,32) on the full Fashion-MNIST past
# 0.70 test accuracy: the convolutional model end to end, server and worker.
. "$(dirname "$0")/lib.sh"
train_to_target 1 0.70 --model cnn:4,8,32 --batch 32 --lr 0.05 --max-iterations 600 --eval-every 50
grep -q "model cnn:4,8,32" "$WORK/worker-0.log" || fail "the worker did not train the CNN"
