"""A small real program instrumented with the span API: nested model/layer spans, attributes,
a worker thread and a child process that joins the same trace through TRACEPARENT."""
import subprocess
import sys
import threading

import strata


def matmul(n):
    a = [[(i * j) % 7 for j in range(n)] for i in range(n)]
    return [[sum(a[i][k] * a[k][j] for k in range(n)) for j in range(n)] for i in range(n)]


@strata.span("worker_task", level="layer")
def worker():
    strata.set_thread_name("worker")
    for _ in range(3):
        with strata.span("matmul", level="layer", n=24):
            matmul(24)


def main():
    with strata.span("application", level="application", script="spans_demo"):
        t = threading.Thread(target=worker)
        t.start()
        for step in range(5):
            with strata.span("predict", level="model", batch=8, step=step) as s:
                with strata.span("layer_a", level="layer"):
                    matmul(20)
                with strata.span("layer_b", level="layer"):
                    matmul(16)
                s.metric("items", 8.0)
            strata.counter("loss", 1.0 / (step + 1))
        t.join()
        if "--child" not in sys.argv:
            with strata.span("spawn_child", level="model"):
                subprocess.run([sys.executable, __file__, "--child"], env=strata.inject_context(), check=True)


if __name__ == "__main__":
    main()
