"""Which parameters and conditions a template uses, and removing one from its text with nothing else touched."""

from __future__ import annotations

from cairn.bundle.templating import cfnyaml
from cairn.bundle.templating.declarations import remove
from cairn.bundle.templating.references import removable, unused

TEMPLATE = """\
Parameters:
  # The driver.
  Driver:
    Type: String
    Default: direct

  # Optional: a bucket.
  # Two lines of comment.
  Bucket:
    Type: String
    Description: >-
      A folded description
      over two lines.

  Prefix:
    Type: String
  Table:
    Type: String
  Unread:
    Type: String

Conditions:
  UseSteps: !Equals [!Ref Driver, stepfunctions]
  HasBucket: !Not [!Equals [!Ref Bucket, ""]]
  HasUnread: !Not [!Equals [!Ref Unread, ""]]
  Either: !Or [!Condition UseSteps, !Condition HasBucket]

Resources:
  Topic:
    Type: AWS::SNS::Topic
    Condition: Either
    Properties:
      TopicName: !Sub "${Prefix}-topic"
      Tags:
        - Key: table
          Value: !FindInMap [Tables, !Ref Table, Name]
"""


def test_a_name_is_used_through_ref_sub_findinmap_and_the_conditions_in_use() -> None:
    assert unused(cfnyaml.load(TEMPLATE)) == {"Parameters": ["Unread"], "Conditions": ["HasUnread"]}


def test_removing_a_declaration_takes_its_comments_and_indented_lines_and_nothing_else() -> None:
    removed = remove(TEMPLATE, "Parameters", ["Bucket"])
    assert removed == TEMPLATE.replace(
        "  # Optional: a bucket.\n  # Two lines of comment.\n  Bucket:\n    Type: String\n    Description: >-\n"
        "      A folded description\n      over two lines.\n\n",
        "",
    )
    assert remove(removed, "Conditions", ["HasUnread", "Missing"]) == removed.replace(
        '  HasUnread: !Not [!Equals [!Ref Unread, ""]]\n', ""
    )
    assert remove(TEMPLATE, "Resources", ["Nothing"]) == TEMPLATE


def test_a_section_left_empty_goes_too_with_its_comment() -> None:
    text = (
        "Transform: AWS::Serverless-2016-10-31\n\n# The conditions.\nConditions:\n  # Only one.\n"
        "  One: !Equals [a, b]\n\nResources:\n  T:\n    Type: AWS::SNS::Topic\n"
    )
    assert remove(text, "Conditions", ["One"]) == (
        "Transform: AWS::Serverless-2016-10-31\n\nResources:\n  T:\n    Type: AWS::SNS::Topic\n"
    )


def test_what_a_declaration_that_stays_reads_is_not_removable() -> None:
    template = cfnyaml.load(TEMPLATE)
    assert removable(template, {"Unread", "HasUnread"}) == {"Parameters": ["Unread"], "Conditions": ["HasUnread"]}
    assert removable(template, {"Unread"}) == {"Parameters": [], "Conditions": []}  # HasUnread stays and reads it
