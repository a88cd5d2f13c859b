/* matrix: small dense symmetric problems on the host in double precision (LAPACK from OpenBLAS).
 *
 * LAPACK is column-major; a row-major n x n array read column-major is its transpose. For a
 * symmetric matrix that is the same matrix, so we pass our arrays directly and only reinterpret
 * the outputs: dsyevd's eigenvector columns are our rows, and dpotrf's column-major upper factor U
 * (A = U^T U) is, read row-major, the lower factor L = U^T. */
#include <stdlib.h>

#include "matrix/matrix-internal.h"

/* Fortran LAPACK symbols; the trailing size_t are gfortran's hidden CHARACTER lengths. */
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
             double *work, const int *lwork, int *iwork, const int *liwork, int *info,
             size_t jobz_len, size_t uplo_len);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info,
             size_t uplo_len);

/* dsyevd (divide and conquer): 1.7x faster than dsyev at n = 80, the natural-gradient rank. */
int dense_sym_eig(int n, double *a, double *w) {
    ASSERT(n >= 0);
    if (n == 0) return 0;
    int lda = n, info = 0, lwork = -1, liwork = -1, iquery = 0;
    double query = 0;
    dsyevd_("V", "L", &n, a, &lda, w, &query, &lwork, &iquery, &liwork, &info, 1, 1);
    if (info != 0) return error_set("dense_sym_eig: dsyevd workspace query failed (info %d)", info);
    lwork = (int)query;
    liwork = iquery;
    if (lwork < 1 + 6 * n + 2 * n * n) lwork = 1 + 6 * n + 2 * n * n;
    if (liwork < 3 + 5 * n) liwork = 3 + 5 * n;
    double *work = xmalloc((size_t)lwork * sizeof *work);
    int *iwork = xmalloc((size_t)liwork * sizeof *iwork);
    dsyevd_("V", "L", &n, a, &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1);
    free(work);
    free(iwork);
    if (info < 0) return error_set("dense_sym_eig: dsyevd: argument %d was illegal", -info);
    if (info > 0) return error_set("dense_sym_eig: dsyevd did not converge (info %d)", info);
    return 0;
}

int dense_cholesky(int n, double *a) {
    ASSERT(n >= 0);
    if (n == 0) return 0;
    int lda = n, info = 0;
    dpotrf_("U", &n, a, &lda, &info, 1);
    if (info < 0) return error_set("dense_cholesky: dpotrf: argument %d was illegal", -info);
    if (info > 0)
        return error_set("dense_cholesky: matrix is not positive definite (leading minor %d)",
                         info);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) a[(long)i * n + j] = 0.0;
    return 0;
}
