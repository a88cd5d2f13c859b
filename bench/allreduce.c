/* allreduce: time of MPI_Allreduce(SUM, float) per call for a range of sizes, the slowest rank's
 * mean over the calls after one warm-up; one line per size: "bytes seconds". The algorithm is
 * Open MPI's choice unless OMPI_MCA_coll_tuned_use_dynamic_rules=1 and
 * OMPI_MCA_coll_tuned_allreduce_algorithm=N force one (4 ring, 2 reduce + broadcast, i.e. trees).
 * Used by bench/cluster-scaling.sh to fit the latency and bandwidth of the scaling model.
 *   mpirun -np P allreduce [max-bytes]        (sizes 4 B, 4 KB, then x4 up to max, 64 MB default) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t max = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)64 << 20;
    float *buf = malloc(max);
    for (size_t i = 0; i < max / sizeof(float); i++) buf[i] = (float)rank;
    for (size_t bytes = 4; bytes <= max; bytes = bytes == 4 ? 4096 : bytes * 4) {
        int n = (int)(bytes / sizeof(float));
        int iters = bytes <= 65536 ? 200 : bytes <= (4 << 20) ? 20 : 5;
        MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t = (MPI_Wtime() - t0) / iters, tmax = 0;
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) printf("%zu %.6e\n", bytes, tmax);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
