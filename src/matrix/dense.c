/* matrix: small dense symmetric problems on the host in double precision (LAPACK from OpenBLAS).
 *
 * LAPACK is column-major; a row-major n x n array read column-major is its transpose. For a
 * symmetric matrix that is the same matrix, so we pass our arrays directly and only reinterpret
 * the outputs: dsyev's eigenvector columns are our rows, and dpotrf's column-major upper factor U
 * (A = U^T U) is, read row-major, the lower factor L = U^T. */
#include <stdlib.h>

#include "matrix/matrix-internal.h"

/* Fortran LAPACK symbols; the trailing size_t are gfortran's hidden CHARACTER lengths. */
void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
            double *work, const int *lwork, int *info, size_t jobz_len, size_t uplo_len);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info,
             size_t uplo_len);

int dense_sym_eig(int n, double *a, double *w) {
    ASSERT(n >= 0);
    if (n == 0) return 0;
    int lda = n, info = 0, lwork = -1;
    double query = 0;
    dsyev_("V", "L", &n, a, &lda, w, &query, &lwork, &info, 1, 1);
    if (info != 0) return error_set("dense_sym_eig: dsyev workspace query failed (info %d)", info);
    lwork = (int)query;
    if (lwork < 3 * n) lwork = 3 * n;
    double *work = xmalloc((size_t)lwork * sizeof *work);
    dsyev_("V", "L", &n, a, &lda, w, work, &lwork, &info, 1, 1);
    free(work);
    if (info < 0) return error_set("dense_sym_eig: dsyev: argument %d was illegal", -info);
    if (info > 0)
        return error_set("dense_sym_eig: dsyev did not converge (%d off-diagonal elements)", info);
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
