# A LIBSVM job end to end: 2 workers train softmax regression on a sparse,
# generated 3-class problem (classes labelled -1/1/2 style as LIBSVM files
# are) read as libsvm:FILE with its test set FILE.t, to 0.9 accuracy.
. "$(dirname "$0")/lib.sh"
# Class k puts its weight on features 10k+1..10k+5 (with noise); every row
# also has a few random features. Deterministic: awk's srand with a seed.
generate() {
  awk -v seed="$1" -v rows="$2" 'BEGIN {
    srand(seed)
    for (i = 0; i < rows; i++) {
      k = i % 3
      label = (k == 0) ? -1 : k   # -1 is class 0, as in binary LIBSVM files
      line = label
      for (f = 1; f <= 40; f++) {
        v = 0
        if (f > 10 * k && f <= 10 * k + 5) v = 1 + rand()
        else if (rand() < 0.1) v = rand() * 0.8
        if (v != 0) line = line " " f ":" sprintf("%.4f", v)
      }
      print line
    }
  }'
}
generate 1 3000 >"$WORK/toy.svm"
generate 2 600 >"$WORK/toy.svm.t"
WORKER_ARGS=(--data "libsvm:$WORK/toy.svm")
train_to_target 2 0.9 --model softmax --data "libsvm:$WORK/toy.svm" --batch 32 --lr 0.1 \
  --max-iterations 2000 --eval-every 10
# The untrained model (first evaluation) must be far from the target: the
# accuracy was learned, not given.
first=$(sed -n 2p "$WORK/server.tsv" | cut -f 3)
awk -v a="$first" 'BEGIN { exit !(a < 0.6) }' || fail "untrained accuracy $first is already high"
