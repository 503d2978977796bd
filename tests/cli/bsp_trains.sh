# A server and 2 workers under BSP train mlp:128 on the full Fashion-MNIST
# to 0.84 test accuracy within 4000 iterations.
. "$(dirname "$0")/lib.sh"
train_to_target 2 0.84 --policy bsp --model mlp:128 --max-iterations 4000 --eval-every 25
