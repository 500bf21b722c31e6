from rdl.data.database import Database, DataError, Table

__all__ = ["Database", "DataError", "Table"]
