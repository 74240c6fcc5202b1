"""cutlass.utils.tensormap_manager: CuTe DSL's deprecated module path of TensorMapManager and TensorMapUpdateMode,
the Hopper backend's classes (a subclass that warns when made), with the backend's checks of its arguments."""
import warnings

import pytest

import warpweave.utils as utils
from warpweave.utils import tensormap_manager as tm

from dsl_helpers import target


def test_the_backends_classes_under_the_old_path():
    with target("sm_90a"):
        assert tm.TensorMapUpdateMode is utils.TensorMapUpdateMode
        assert issubclass(tm.TensorMapManager, utils.TensorMapManager)
        with pytest.warns(DeprecationWarning, match="tensormap_manager.TensorMapManager is deprecated"):
            m = tm.TensorMapManager(tm.TensorMapUpdateMode.SMEM, 128)
        assert isinstance(m, utils.TensorMapManager) and m.tensormap_update_mode is tm.TensorMapUpdateMode.SMEM
        from warpweave.utils.tensormap_manager import TensorMapManager, TensorMapUpdateMode  # noqa: F401


def test_bad_arguments_refused_as_the_backend_refuses_them():
    with target("sm_90a"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(Exception, match="update mode is a TensorMapUpdateMode"):
            tm.TensorMapManager("smem", 128)
        with pytest.raises(Exception, match="a tensor map is 128 bytes"):
            tm.TensorMapManager(tm.TensorMapUpdateMode.GMEM, 64)
