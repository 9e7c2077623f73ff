"""A workspace's retention: the days its records are kept (``manage.py purge``)."""

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("reduction_app", "0006_transcript_messages"),
    ]

    operations = [
        migrations.AddField(
            model_name="workspace",
            name="retention_days",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Days its records are kept after they were last written (manage.py purge); empty: kept forever.",
                null=True,
                validators=[django.core.validators.MinValueValidator(1)],
            ),
        ),
    ]
