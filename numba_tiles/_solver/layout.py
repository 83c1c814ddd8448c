"""Where `Solver`'s operands lie in shared memory: B's rows, the dense leading dimensions and each operand's items,
which the description and the simulator's twin both take."""


def b_rows(function, m, n):
    """B's rows: n, or for gels max(m, n) (B holds the m right-hand values and gets X's n rows)."""
    return max(m, n) if function == "gels" else n


def dense(function, m, n, nrhs, row):
    """The dense (lda, ldb): a row's items (row-major) or a column's (col-major) of A and of B."""
    return (n, nrhs) if row else (m, b_rows(function, m, n))


def items(function, m, n, nrhs, batches, row=True, leading=None):
    """Each operand's items for ``batches`` problems, A's and B's rows (row-major; columns col-major) ``leading`` =
    (lda, ldb) items apart (by default dense)."""
    rows = b_rows(function, m, n)
    lda, ldb = leading or dense(function, m, n, nrhs, row)
    each = dict(a=(m if row else n) * lda, b=(rows if row else nrhs) * ldb, ipiv=min(m, n), tau=min(m, n), info=1)
    return {p: each[p] * batches for p in each}
