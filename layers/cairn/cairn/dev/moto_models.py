"""moto CloudFormation models for the types the stack uses and moto's CloudFormation lacks: alarms and aliases.

- ``AWS::CloudWatch::Alarm``: created in moto's CloudWatch (name, description, the metric or the metric-math
  expression's first metric, actions), so ``Ref`` and ``Fn::GetAtt Arn`` resolve (the dashboard lists the alarms)
  and ``describe_alarms`` shows them. Alarms are not evaluated locally.
- ``AWS::Lambda::Alias`` (``AutoPublishAlias``): created in moto's Lambda, pointing at the version SAM
  published (whose ``Fn::GetAtt Version`` moto lacks: added); ``cairn dev`` invokes ``<function>:<alias>``
  as the function itself.
"""

from __future__ import annotations

from typing import Any

ALARM = "AWS::CloudWatch::Alarm"
ALIAS = "AWS::Lambda::Alias"


def define() -> None:
    """Register both models with moto's CloudFormation (by subclassing its model base); a version's ``Version``."""
    from moto.awslambda.models import LambdaVersion

    if not hasattr(LambdaVersion, "get_cfn_attribute"):  # SAM's alias names its version by Fn::GetAtt Version
        LambdaVersion.has_cfn_attr = classmethod(lambda cls, attr: attr == "Version")  # type: ignore[assignment]
        LambdaVersion.get_cfn_attribute = lambda self, attr: str(self.version)  # type: ignore[attr-defined]
    _define_alarm()
    _define_alias()


def _first_metric(properties: dict[str, Any]) -> dict[str, Any]:
    """The alarm's metric: its own, or the first one its math expression reads."""
    if "MetricName" in properties:
        return properties
    for query in properties.get("Metrics") or []:
        metric = ((query or {}).get("MetricStat") or {}).get("Metric")
        if metric:
            return dict(metric)
    return {}


def _define_alarm() -> None:
    from moto.cloudwatch.models import cloudwatch_backends
    from moto.core.common_models import CloudFormationModel

    class Alarm(CloudFormationModel):
        """A CloudWatch alarm, as CloudFormation creates it (not evaluated locally)."""

        def __init__(self, name: str, arn: str) -> None:
            self.name = name
            self.arn = arn

        @property
        def physical_resource_id(self) -> str:
            return self.name

        @staticmethod
        def cloudformation_name_type() -> str:
            return "AlarmName"

        @staticmethod
        def cloudformation_type() -> str:
            return ALARM

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr == "Arn"

        def get_cfn_attribute(self, attribute_name: str) -> str:
            return self.arn

        @classmethod
        def create_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
        ) -> CloudFormationModel:
            properties = dict(cloudformation_json.get("Properties") or {})
            metric = _first_metric(properties)
            alarm = cloudwatch_backends[account_id][region_name].put_metric_alarm(
                name=resource_name,
                namespace=str(metric.get("Namespace", "")),
                metric_name=str(metric.get("MetricName", "")),
                comparison_operator=str(properties.get("ComparisonOperator", "GreaterThanThreshold")),
                evaluation_periods=int(properties.get("EvaluationPeriods", 1)),
                period=int(properties.get("Period", 300)),
                threshold=float(properties.get("Threshold", 0)),
                statistic=str(properties.get("Statistic", "Sum")),
                description=str(properties.get("AlarmDescription", "")),
                dimensions=[
                    {"Name": str(item.get("Name")), "Value": str(item.get("Value"))}
                    for item in metric.get("Dimensions") or []
                ],
                alarm_actions=[str(action) for action in properties.get("AlarmActions") or []],
                treat_missing_data=properties.get("TreatMissingData"),
            )
            return cls(resource_name, str(alarm.alarm_arn))

    del Alarm  # registered by being a subclass of CloudFormationModel


def _define_alias() -> None:
    from moto.awslambda.models import lambda_backends
    from moto.core.common_models import CloudFormationModel

    class Alias(CloudFormationModel):
        """A function's alias, pointing at one published version."""

        def __init__(self, arn: str, name: str) -> None:
            self.arn = arn
            self.name = name

        @property
        def physical_resource_id(self) -> str:
            return self.arn

        @staticmethod
        def cloudformation_name_type() -> str:
            return "Name"

        @staticmethod
        def cloudformation_type() -> str:
            return ALIAS

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr in ("AliasArn", "Name")

        def get_cfn_attribute(self, attribute_name: str) -> str:
            return self.arn if attribute_name == "AliasArn" else self.name

        @classmethod
        def create_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
        ) -> CloudFormationModel:
            properties = dict(cloudformation_json.get("Properties") or {})
            function = str(properties.get("FunctionName", ""))
            version = str(properties.get("FunctionVersion", "$LATEST")).rsplit(":", 1)[-1]
            name = str(properties.get("Name", resource_name))
            alias = lambda_backends[account_id][region_name].create_alias(
                name=name,
                function_name=function,
                function_version=version if version.isdigit() else "$LATEST",
                description=str(properties.get("Description", "")),
                routing_config="",
            )
            return cls(str(alias.arn), name)

    del Alias  # registered by being a subclass of CloudFormationModel
