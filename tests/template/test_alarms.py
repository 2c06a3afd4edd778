"""Alarms notify someone when the deployer names who: an e-mail (through a topic of the stack) or a topic."""

from __future__ import annotations

import re

import pytest

from tests.template.cfn import Resolver
from tests.template.stacks import stack

EMAIL = "ops@example.com"
TOPIC = "arn:aws:sns:us-east-1:123456789012:on-call"


def alarms(resolver: Resolver) -> list[str]:
    found = list(resolver.of_type("AWS::CloudWatch::Alarm"))
    assert len(found) >= 3
    return found


@pytest.mark.parametrize("driver", ["direct", "stepfunctions"])
def test_without_a_recipient_no_topic_is_created_and_no_alarm_has_actions(driver: str) -> None:
    resolver = stack(Driver=driver)
    assert list(resolver.of_type("AWS::SNS::Topic")) == []
    for alarm_id in alarms(resolver):
        assert "AlarmActions" not in resolver.properties(alarm_id), alarm_id


@pytest.mark.parametrize("driver", ["direct", "stepfunctions"])
def test_an_alarm_email_gets_a_topic_with_its_subscription_that_every_alarm_notifies(driver: str) -> None:
    resolver = stack(Driver=driver, AlarmEmail=EMAIL)
    (topic_id,) = resolver.of_type("AWS::SNS::Topic")
    assert resolver.properties(topic_id)["Subscription"] == [{"Protocol": "email", "Endpoint": EMAIL}]
    for alarm_id in alarms(resolver):
        assert resolver.properties(alarm_id)["AlarmActions"] == [resolver.ref(topic_id)], alarm_id


def test_an_alarm_topic_arn_is_notified_by_every_alarm_and_no_topic_is_created() -> None:
    resolver = stack(Driver="stepfunctions", AlarmTopicArn=TOPIC)
    assert list(resolver.of_type("AWS::SNS::Topic")) == []
    for alarm_id in alarms(resolver):
        assert resolver.properties(alarm_id)["AlarmActions"] == [TOPIC], alarm_id


def test_both_recipients_are_notified() -> None:
    resolver = stack(AlarmEmail=EMAIL, AlarmTopicArn=TOPIC)
    (topic_id,) = resolver.of_type("AWS::SNS::Topic")
    for alarm_id in alarms(resolver):
        assert resolver.properties(alarm_id)["AlarmActions"] == [resolver.ref(topic_id), TOPIC], alarm_id


def test_the_parameters_refuse_what_cannot_be_notified() -> None:
    parameters = stack().template["Parameters"]
    for name in ("AlarmEmail", "AlarmTopicArn"):
        assert parameters[name]["Default"] == ""
    email, topic = (re.compile(parameters[name]["AllowedPattern"]) for name in ("AlarmEmail", "AlarmTopicArn"))
    assert all(email.fullmatch(value) for value in (EMAIL, ""))
    assert not any(email.fullmatch(value) for value in ("ops", "ops@example.com,other@example.com"))
    assert all(topic.fullmatch(value) for value in (TOPIC, ""))
    assert not topic.fullmatch("arn:aws:sqs:us-east-1:123456789012:queue")
