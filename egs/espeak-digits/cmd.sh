# cmd.sh (Kaldi's): the job runners of the recipe, sourced by run.sh; --cmd on its command line
# wins. utils/run.pl runs the jobs on this machine; on a cluster:
#   export train_cmd="utils/slurm.pl --mem 2G"   (or utils/queue.pl for Grid Engine)
export train_cmd="utils/run.pl"
export decode_cmd="utils/run.pl"
