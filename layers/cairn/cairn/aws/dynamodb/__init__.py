"""DynamoDB storage, split by what it stores: jobs and their transitions, history, listings, maps, lessons.

:class:`DynamoDBStorage` is the store; the table's layout is :mod:`cairn.aws.dynamodb.schema`, the
item codec :mod:`cairn.aws.dynamodb.codec`.
"""

from .listings import StalledJob
from .storage import DynamoDBStorage

__all__ = ["DynamoDBStorage", "StalledJob"]
