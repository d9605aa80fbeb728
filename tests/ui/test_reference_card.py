"""FP32's card on the scorecard says why it has no picture (an input that is not an image) instead of standing
blank."""

from __future__ import annotations

from app.core.results import Answers
from app.ui.results.scorecard_answers import ReferenceCard


def test_a_reference_card_without_pictures_says_why(qtbot):
    answers = Answers.from_json({"inputs": [None], "photos": False, "outputs": {
        "scores": {"kind": "classes", "candidates": {"ort-cpu:fp16": {"cand": ["x"]}}}}})
    card = ReferenceCard(answers, "ort-cpu:fp32")
    qtbot.addWidget(card)
    card.show()
    assert card.no_picture.isVisible() and not card.photo.isVisible() and not card.picture.isVisible()
    assert "not an image" in card.no_picture.text()
