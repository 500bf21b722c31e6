"""``python tests/training/killed_run.py POINT [overrides]``: ``python -m rdl.train`` that
SIGKILLs its whole process group (every DDP process and loader worker) at ``POINT``:

- ``none``: not killed;
- ``ckpt:K``: right after the K-th checkpoint file is written;
- ``write:K``: in the middle of writing the K-th checkpoint file (half its bytes written);
- ``epoch:E``: right after epoch E's end checkpoint (at the start of epoch E + 1);
- ``valdone:E``: after epoch E's validation, before its end checkpoint;
- ``step:S``: at the end of training step S, before that step's checkpoint (Lightning runs
  checkpoint callbacks last);
- ``val:E:B``: after validation batch B of epoch E (not the sanity check);
- ``test:B``: after batch B of the final test, when training is over.

Run it in a session of its own (``start_new_session=True``): the kill takes the group.
"""
import os
import runpy
import signal
import sys

import pytorch_lightning as pl
import torch

kind, *args = sys.argv.pop(1).split(":")
args = [int(a) for a in args]


def die():
    os.killpg(os.getpgid(0), signal.SIGKILL)


writes = [0]
if kind == "ckpt":
    save = pl.Trainer.save_checkpoint

    def save_then_die(self, *a, **k):
        save(self, *a, **k)
        if self.is_global_zero:  # the process that writes
            writes[0] += 1
            if writes[0] == args[0]:
                die()
    pl.Trainer.save_checkpoint = save_then_die
elif kind == "write":
    import io

    from rdl.training.resume import AtomicCheckpointIO
    write, torch_save, dying = AtomicCheckpointIO.save_checkpoint, torch.save, [False]

    def counted(self, *a, **k):
        writes[0] += 1
        dying[0] = writes[0] == args[0]
        return write(self, *a, **k)

    def half_then_die(obj, f, *a, **k):
        if not dying[0]:
            return torch_save(obj, f, *a, **k)
        buf = io.BytesIO()
        torch_save(obj, buf, *a, **k)
        with open(f, "wb") as out:
            out.write(buf.getvalue()[: len(buf.getvalue()) // 2])
            out.flush()
        die()
    AtomicCheckpointIO.save_checkpoint, torch.save = counted, half_then_die
elif kind != "none":
    class Kill(pl.Callback):
        def on_train_batch_end(self, trainer, *a):
            if kind == "step" and trainer.global_step == args[0]:
                die()

        def on_train_epoch_start(self, trainer, *a):
            if kind == "epoch" and trainer.current_epoch == args[0] + 1:
                die()

        def on_train_epoch_end(self, trainer, *a):  # before the checkpoint callbacks'
            if kind == "valdone" and trainer.current_epoch == args[0]:
                die()

        def on_validation_batch_end(self, trainer, module, outputs, batch, batch_idx, *a):
            if (kind == "val" and not trainer.sanity_checking
                    and trainer.current_epoch == args[0] and batch_idx == args[1]):
                die()

        def on_test_batch_end(self, trainer, module, outputs, batch, batch_idx, *a):
            if kind == "test" and batch_idx == args[0]:
                die()

    init = pl.Trainer.__init__

    def with_kill(self, *a, callbacks=None, **k):
        init(self, *a, callbacks=[*(callbacks or []), Kill()], **k)
    pl.Trainer.__init__ = with_kill

sys.argv[0] = "rdl.train"
runpy.run_module("rdl.train", run_name="__main__", alter_sys=True)
